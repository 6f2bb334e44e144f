package mor.jvm;

import java.util.Set;

/** A set of long keys (open addressing, no boxing) and whether a null key is among them. */
final class LongKeys {
  private static final long EMPTY = Long.MIN_VALUE;

  private final long[] slots;
  private final int mask;
  private final boolean hasEmptyValue; // Long.MIN_VALUE itself is a key
  final boolean hasNull;

  private LongKeys(long[] slots, boolean hasEmptyValue, boolean hasNull) {
    this.slots = slots;
    this.mask = slots.length - 1;
    this.hasEmptyValue = hasEmptyValue;
    this.hasNull = hasNull;
  }

  /** The keys of a one-column equality group: Long values, or null. */
  static LongKeys of(Set<Object> keys) {
    int capacity = Integer.highestOneBit(Math.max(4, keys.size() * 2 - 1)) << 1;
    long[] slots = new long[capacity];
    java.util.Arrays.fill(slots, EMPTY);
    boolean hasEmptyValue = false;
    boolean hasNull = false;
    for (Object key : keys) {
      if (key == null) {
        hasNull = true;
      } else if ((Long) key == EMPTY) {
        hasEmptyValue = true;
      } else {
        long k = (Long) key;
        int i = slot(k, capacity - 1);
        while (slots[i] != EMPTY && slots[i] != k) i = (i + 1) & (capacity - 1);
        slots[i] = k;
      }
    }
    return new LongKeys(slots, hasEmptyValue, hasNull);
  }

  boolean contains(long key) {
    if (key == EMPTY) return hasEmptyValue;
    int i = slot(key, mask);
    while (true) {
      long s = slots[i];
      if (s == key) return true;
      if (s == EMPTY) return false;
      i = (i + 1) & mask;
    }
  }

  private static int slot(long key, int mask) {
    long h = key * 0x9E3779B97F4A7C15L; // Fibonacci hashing: spreads sequential ids
    return (int) (h ^ (h >>> 32)) & mask;
  }
}
