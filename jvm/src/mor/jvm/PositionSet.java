package mor.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.roaringbitmap.RoaringBitmap;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/** The deleted positions of one data file: a Roaring bitmap, 64-bit only past 2^32 rows. */
final class PositionSet {
  /** Up to this many positions are also kept as a sorted array, for a merge with the rows. */
  private static final int MAX_SORTED = 1 << 25;

  private final RoaringBitmap low = new RoaringBitmap();
  private Roaring64NavigableMap high;
  private volatile int[] sorted;

  void add(long pos) {
    if (pos >= 0 && pos <= 0xFFFFFFFFL) {
      low.add((int) pos);
    } else {
      if (high == null) high = new Roaring64NavigableMap();
      high.addLong(pos);
    }
  }

  boolean contains(long pos) {
    if (pos >= 0 && pos <= 0xFFFFFFFFL) return low.contains((int) pos);
    return high != null && high.contains(pos);
  }

  long cardinality() {
    return low.getLongCardinality() + (high == null ? 0 : high.getLongCardinality());
  }

  /**
   * Adds a Roaring portable 64-bit vector (a little-endian count of 32-bit bitmaps, each after
   * its 32-bit key), as a deletion vector holds it.
   */
  void addPortable64(ByteBuffer vector) throws java.io.IOException {
    ByteBuffer b = vector.slice().order(ByteOrder.LITTLE_ENDIAN);
    long count = b.getLong();
    for (long i = 0; i < count; i++) {
      long key = b.getInt() & 0xFFFFFFFFL;
      RoaringBitmap bitmap = new RoaringBitmap();
      int start = b.position();
      bitmap.deserialize(b.slice());
      b.position(start + bitmap.serializedSizeInBytes());
      if (key == 0) {
        low.or(bitmap);
      } else {
        if (high == null) high = new Roaring64NavigableMap();
        for (int low32 : bitmap) high.addLong((key << 32) | (low32 & 0xFFFFFFFFL));
      }
    }
  }

  /** The estimated heap bytes: the bitmaps and the sorted copy, once built. */
  long sizeInBytes() {
    int[] s = sorted;
    return 64 + low.getLongSizeInBytes() + (high == null ? 0 : high.getLongSizeInBytes()) + (s == null ? 0 : 16 + 4L * s.length);
  }

  void optimize() {
    low.runOptimize();
  }

  /**
   * The positions in order (unsigned ints), or null when there are too many or some lie past
   * 2^32: then {@link #contains} answers. Built once, shared by the tasks of a JVM.
   */
  int[] sorted() {
    int[] s = sorted;
    if (s == null && high == null && low.getLongCardinality() <= MAX_SORTED) {
      s = sorted = low.toArray();
    }
    return s;
  }
}
