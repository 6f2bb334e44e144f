package mor.jvm;

import java.io.Serializable;
import org.apache.spark.broadcast.Broadcast;

/**
 * What every function of one read shares: its descriptor's text, broadcast once (a String: in
 * local mode the executors get the driver's very object, whose class must be one that the
 * session's and the executor's class loaders share), and the executors' cache bound.
 */
final class ReadFunctions implements Serializable {
  private static final long serialVersionUID = 1L;

  final Broadcast<String> deletes;
  final long cacheBytes;

  ReadFunctions(Broadcast<String> deletes, long cacheBytes) {
    this.deletes = deletes;
    this.cacheBytes = cacheBytes;
  }
}
