package mor.jvm;

import java.io.Serializable;
import org.apache.spark.broadcast.Broadcast;

/**
 * What every function of one read shares: its descriptor's text and its Hadoop configuration
 * ({@link ReadConf}), each broadcast once (a String, a byte[]: in local mode the executors get
 * the driver's very object, whose class must be one that the session's and the executor's class
 * loaders share), and the executors' cache bound.
 */
final class ReadFunctions implements Serializable {
  private static final long serialVersionUID = 1L;

  final Broadcast<String> deletes;
  final Broadcast<byte[]> hadoopConf;
  final long cacheBytes;

  ReadFunctions(Broadcast<String> deletes, Broadcast<byte[]> hadoopConf, long cacheBytes) {
    this.deletes = deletes;
    this.hadoopConf = hadoopConf;
    this.cacheBytes = cacheBytes;
  }
}
