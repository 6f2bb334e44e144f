package mor.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * The Hadoop configuration a read's delete files are opened with: the one Spark's own file scans
 * build on the driver when the read is made, so that settings changed on the running session
 * (an endpoint, credentials, a filesystem) reach the delete reads as they reach Spark's. It
 * travels as Hadoop's own serialized form, broadcast once per read, and is parsed once per
 * executor while the cache keeps it.
 */
final class ReadConf {
  private ReadConf() {}

  /**
   * The session's Hadoop configuration, serialized. As Spark's scans make it: the context's
   * Hadoop configuration (start-up {@code spark.hadoop.*} settings, and any set on it since), then
   * every setting of the session as it is, under its own name (Spark strips no prefix there).
   */
  static byte[] of(SparkSession session) {
    Configuration conf = new Configuration(session.sparkContext().hadoopConfiguration());
    scala.collection.Iterator<Tuple2<String, String>> settings = session.conf().getAll().iterator();
    while (settings.hasNext()) {
      Tuple2<String, String> s = settings.next();
      // mor's own descriptors (set while reads resolve) are no Hadoop settings, and large.
      if (s._2() != null && !s._1().startsWith(DeleteFunctions.CONF_PREFIX)) conf.set(s._1(), s._2());
    }
    // A delete file is small: its one or two column chunks are read at once, not through
    // vectored reads (on a local file, an asynchronous channel's round trip per chunk).
    conf.setBoolean("parquet.hadoop.vectored.io.enabled", false);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      conf.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return bytes.toByteArray();
  }

  /** A read's configuration on an executor, parsed once per JVM while the cache keeps it. */
  static Configuration of(Broadcast<byte[]> shipped) {
    // About 300 bytes a setting: two strings, a node in each of Configuration's two tables, and
    // the names of the sources it came from.
    return DeleteCache.SHARED.get("H" + shipped.id(), k -> parse(shipped.value()), c -> 300L * c.size());
  }

  private static Configuration parse(byte[] bytes) {
    Configuration conf = new Configuration(false); // every setting is in the bytes, defaults too
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      conf.readFields(in);
    } catch (IOException e) {
      throw new UncheckedIOException("mor could not read the Hadoop configuration its driver sent", e);
    }
    return conf;
  }
}
