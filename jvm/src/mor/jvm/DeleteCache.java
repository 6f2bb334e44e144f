package mor.jvm;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * What an executor keeps of the delete files it read, for its other tasks (the splits of one data
 * file, the data files one delete file applies to): one least-recently-used cache per JVM,
 * bounded by the estimated heap bytes of its values ({@code spark.mor.deletes.cacheBytes}, read
 * by the driver and carried by each read's functions: the last read to start a task here sets
 * it). A value larger than the whole bound is handed to the task that loaded it and not kept.
 */
final class DeleteCache {
  static final String BYTES_CONF = "spark.mor.deletes.cacheBytes";
  static final long DEFAULT_BYTES = 256L << 20;
  static final DeleteCache SHARED = new DeleteCache();

  private final Map<String, Object> loading = new ConcurrentHashMap<>();
  private final LinkedHashMap<String, Sized> entries = new LinkedHashMap<>(16, 0.75f, true);
  private long bytes;
  private long budget = DEFAULT_BYTES;

  private static final class Sized {
    final Object value;
    final long bytes;

    Sized(Object value, long bytes) {
      this.value = value;
      this.bytes = bytes;
    }
  }

  synchronized void budget(long limit) {
    if (limit == budget) return;
    budget = limit;
    evict();
  }

  synchronized long bytes() {
    return bytes;
  }

  /**
   * The cached value, else loaded once: tasks asking for the same key at once (every task's first
   * file needs the same equality deletes) wait for one load, while loads of other keys go on.
   */
  <V> V get(String key, Function<String, V> load, ToLongFunction<V> weigh) {
    V hit = lookup(key);
    if (hit != null) return hit;
    Object lock = loading.computeIfAbsent(key, k -> new Object());
    try {
      synchronized (lock) {
        hit = lookup(key);
        if (hit != null) return hit;
        V value = load.apply(key);
        put(key, value, weigh.applyAsLong(value));
        return value;
      }
    } finally {
      loading.remove(key, lock);
    }
  }

  @SuppressWarnings("unchecked") // a key names one kind of value (DeleteLoader's prefixes)
  private synchronized <V> V lookup(String key) {
    Sized hit = entries.get(key);
    return hit == null ? null : (V) hit.value;
  }

  private synchronized void put(String key, Object value, long size) {
    long weight = size + key.length() + 136; // the key (one byte a character), the entry, the map's node
    if (weight > budget) return;
    Sized old = entries.put(key, new Sized(value, weight));
    if (old != null) bytes -= old.bytes;
    bytes += weight;
    evict();
  }

  private void evict() {
    java.util.Iterator<Sized> eldest = entries.values().iterator();
    while (bytes > budget && eldest.hasNext()) {
      bytes -= eldest.next().bytes;
      eldest.remove();
    }
  }

  /** A byte size as Spark's settings write it: 268435456, 256m, 1g (k, m, g, t; b or ib optional). */
  static long parseBytes(String text) {
    String s = text.trim().toLowerCase(java.util.Locale.ROOT);
    if (s.endsWith("ib")) s = s.substring(0, s.length() - 2);
    else if (s.endsWith("b")) s = s.substring(0, s.length() - 1);
    int shift = 0;
    if (!s.isEmpty()) {
      int unit = "kmgt".indexOf(s.charAt(s.length() - 1));
      if (unit >= 0) {
        shift = 10 * (unit + 1);
        s = s.substring(0, s.length() - 1).trim();
      }
    }
    try {
      long n = Long.parseLong(s);
      if (n >= 0 && n <= (Long.MAX_VALUE >> shift)) return n << shift;
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(BYTES_CONF + " must be a size in bytes (268435456, 256m, 1g), not '" + text + "'");
  }

  /** The estimated heap bytes of a set of equality keys (a HashSet's nodes and the values). */
  static long keysSize(Collection<Object> keys) {
    long total = 64;
    for (Object key : keys) total += 40 + valueSize(key);
    return total;
  }

  private static long valueSize(Object value) {
    if (value == null || value instanceof Boolean) return 0;
    if (value instanceof Long) return 16;
    if (value instanceof UTF8String) return 40 + ((UTF8String) value).numBytes();
    if (value instanceof ByteBuffer) return 64 + ((ByteBuffer) value).capacity();
    if (value instanceof BigInteger) return 56 + ((BigInteger) value).bitLength() / 8;
    if (value instanceof Collection) {
      long total = 32;
      for (Object part : (Collection<?>) value) total += 4 + valueSize(part);
      return total;
    }
    return 32;
  }
}
