package mor.jvm;

import java.io.Serializable;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A bound function of one read: it travels with the plan (its name, the read's deletes and
 * Hadoop configuration as broadcast handles and the executors' cache bound: a few hundred bytes,
 * whatever the read's size) and, in each task, looks up the data file a row comes from through
 * a {@link FileCursor} made on first use.
 */
public abstract class ReadFunction<R> implements ScalarFunction<R>, Serializable {
  private static final long serialVersionUID = 3L;

  private final String name;
  private final Broadcast<String> deletes;
  private final Broadcast<byte[]> hadoopConf;
  private final long cacheBytes;
  private final ValueKind[] kinds; // the equality arguments' kinds; null: no deletes read
  private transient FileCursor cursor;

  ReadFunction(String name, ReadFunctions read, ValueKind[] kinds) {
    this.name = name;
    this.deletes = read.deletes;
    this.hadoopConf = read.hadoopConf;
    this.cacheBytes = read.cacheBytes;
    this.kinds = kinds;
  }

  /** The data file of the row whose {@code _metadata.file_path} this is. */
  final FileCursor.Current file(UTF8String path) {
    FileCursor c = cursor;
    if (c == null) {
      DeleteCache.SHARED.budget(cacheBytes);
      // The configuration only where deletes are read: the other functions never fetch it.
      c = cursor = new FileCursor(DeleteLoader.descriptor(deletes), kinds, kinds == null ? null : ReadConf.of(hadoopConf));
    }
    return c.at(path);
  }

  @Override
  public boolean isResultNullable() {
    return false;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String canonicalName() {
    return "mor." + name;
  }
}
