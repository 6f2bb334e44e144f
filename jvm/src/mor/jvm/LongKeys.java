package mor.jvm;

import java.util.Arrays;
import java.util.Set;

/**
 * A set of long keys and whether a null key is among them, without boxing. Keys that lie close
 * together (deleted ids: a few percent of a range) are a bitset over their range, so that a
 * data file's ascending ids look up neighbouring words; other keys are an open-addressing hash
 * table, where every lookup lands anywhere in memory (a cache miss per row once the table
 * outgrows the cache).
 */
final class LongKeys {
  private static final long EMPTY = Long.MIN_VALUE;
  // A bitset of up to 128 bits a key takes at most 16 bytes a key, no more than the hash table.
  private static final long BITS_PER_KEY = 128;

  final boolean hasNull;
  // The bitset form: bit (key - min) of bits, for min <= key <= max.
  private final long[] bits;
  private final long min;
  private final long max;
  // The hash form.
  private final long[] slots;
  private final int mask;
  private final boolean hasEmptyValue; // Long.MIN_VALUE itself is a key

  private LongKeys(boolean hasNull, long[] bits, long min, long max, long[] slots, boolean hasEmptyValue) {
    this.hasNull = hasNull;
    this.bits = bits;
    this.min = min;
    this.max = max;
    this.slots = slots;
    this.mask = slots == null ? 0 : slots.length - 1;
    this.hasEmptyValue = hasEmptyValue;
  }

  /** The keys of a one-column equality group: Long values, or null. */
  static LongKeys of(Set<Object> keys) {
    boolean hasNull = false;
    long count = 0;
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (Object key : keys) {
      if (key == null) {
        hasNull = true;
      } else {
        long k = (Long) key;
        min = Math.min(min, k);
        max = Math.max(max, k);
        count++;
      }
    }
    if (count == 0) return new LongKeys(hasNull, new long[0], 0, -1, null, false);
    long range = max - min; // negative: wider than Long.MAX_VALUE
    if (range >= 0 && range / BITS_PER_KEY < count && range / 64 < Integer.MAX_VALUE - 8) {
      long[] bits = new long[(int) (range / 64) + 1];
      for (Object key : keys) {
        if (key != null) {
          long offset = (Long) key - min;
          bits[(int) (offset >>> 6)] |= 1L << offset;
        }
      }
      return new LongKeys(hasNull, bits, min, max, null, false);
    }
    return hashed(keys, count, hasNull);
  }

  private static LongKeys hashed(Set<Object> keys, long count, boolean hasNull) {
    int capacity = Integer.highestOneBit((int) Math.max(4, count * 2 - 1)) << 1;
    long[] slots = new long[capacity];
    Arrays.fill(slots, EMPTY);
    boolean hasEmptyValue = false;
    for (Object key : keys) {
      if (key == null) continue;
      long k = (Long) key;
      if (k == EMPTY) {
        hasEmptyValue = true;
      } else {
        int i = slot(k, capacity - 1);
        while (slots[i] != EMPTY && slots[i] != k) i = (i + 1) & (capacity - 1);
        slots[i] = k;
      }
    }
    return new LongKeys(hasNull, null, 0, -1, slots, hasEmptyValue);
  }

  /** The estimated heap bytes: the bitset or the hash slots. */
  long sizeInBytes() {
    return 64 + 8L * (bits != null ? bits.length : slots == null ? 0 : slots.length);
  }

  boolean contains(long key) {
    if (bits != null) {
      if (key < min || key > max) return false;
      long offset = key - min;
      return (bits[(int) (offset >>> 6)] & (1L << offset)) != 0;
    }
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
