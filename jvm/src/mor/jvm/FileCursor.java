package mor.jvm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One task's view of a read's deletes: the deletes of the data file its rows come from, loaded
 * when the file changes. Spark hands every row of a file the same {@code file_path} object, so
 * the file is looked up by identity first and by content only when that object changes.
 */
final class FileCursor {
  private final Descriptor descriptor;
  private final ValueKind[] kinds;
  private final Configuration conf;
  private UTF8String lastObject;
  private UTF8String lastPath;
  private Current current;

  /**
   * {@code kinds}: the equality arguments' kinds, or null for a cursor that reads no deletes;
   * {@code conf}: the read's Hadoop configuration, for the delete files (null when none are read).
   */
  FileCursor(Descriptor descriptor, ValueKind[] kinds, Configuration conf) {
    this.descriptor = descriptor;
    this.kinds = kinds;
    this.conf = conf;
    if (kinds != null && kinds.length != descriptor.argFieldIds.length) {
      throw new IllegalArgumentException(
          "mor's delete function got " + kinds.length + " equality columns for " + descriptor.argFieldIds.length + " field ids");
    }
  }

  Current at(UTF8String path) {
    if (path == lastObject) return current;
    if (lastPath == null || !path.equals(lastPath)) {
      current = load(path.toString());
      lastPath = path.clone();
    }
    lastObject = path;
    return current;
  }

  private Current load(String key) {
    Descriptor.DataFile file = descriptor.files.get(key);
    if (file == null) {
      throw new IllegalStateException("mor: no deletes are known for " + key + " (this read planned " + descriptor.files.size()
          + " data files); a file outside the read's plan must not be filtered here");
    }
    if (kinds == null) {
      return new Current(file, null, new EqualityGroup[0]);
    }
    PositionSet positions = DeleteLoader.positions(file, conf);
    Map<String, List<Descriptor.DeleteFile>> byIds = new LinkedHashMap<>();
    for (Descriptor.DeleteFile d : file.deletes) {
      if (d.kind == Descriptor.Kind.EQUALITY) {
        byIds.computeIfAbsent(Arrays.toString(d.fieldIds), k -> new ArrayList<>()).add(d);
      }
    }
    List<EqualityGroup> groups = new ArrayList<>();
    for (List<Descriptor.DeleteFile> files : byIds.values()) {
      long[] ids = files.get(0).fieldIds;
      int[] ordinals = new int[ids.length];
      ValueKind[] groupKinds = new ValueKind[ids.length];
      for (int i = 0; i < ids.length; i++) {
        int arg = argOf(ids[i]);
        ordinals[i] = arg + 2;
        groupKinds[i] = kinds[arg];
      }
      groups.add(new EqualityGroup(ordinals, groupKinds, files, ids, conf));
    }
    return new Current(file, positions, groups.toArray(new EqualityGroup[0]));
  }

  private int argOf(long fieldId) {
    for (int i = 0; i < descriptor.argFieldIds.length; i++) {
      if (descriptor.argFieldIds[i] == fieldId) return i;
    }
    throw new IllegalStateException("mor's delete function was not given equality column " + fieldId);
  }

  /** The current data file: what the metadata says of it, and its deletes. */
  static final class Current {
    final UTF8String tablePath;
    final Long firstRowId;
    final Long dataSequence;
    private final PositionSet positions;
    private final int[] sorted; // the positions in order, walked with the rows: a merge
    private int next; // the first sorted position not below the last row's
    private long last = -1;
    private final EqualityGroup[] groups;
    private LongKeys longKeys;

    Current(Descriptor.DataFile file, PositionSet positions, EqualityGroup[] groups) {
      this.tablePath = UTF8String.fromString(file.tablePath);
      this.firstRowId = file.firstRowId;
      this.dataSequence = file.dataSequence;
      this.positions = positions;
      this.sorted = positions == null ? null : positions.sorted();
      this.groups = groups;
    }

    /**
     * Is row {@code pos} not deleted? Spark reads a file's rows in order of position (a split
     * starting anywhere), so the sorted positions are merged with them; a position before the
     * last one (another split of the same file) starts the merge again by binary search.
     */
    boolean keepsPosition(long pos) {
      int[] s = sorted;
      if (s == null) return positions == null || !positions.contains(pos);
      int i = next;
      if (pos < last || last < 0) i = lowerBound(s, pos);
      last = pos;
      while (i < s.length && (s[i] & 0xFFFFFFFFL) < pos) i++;
      next = i;
      return i == s.length || (s[i] & 0xFFFFFFFFL) != pos;
    }

    private static int lowerBound(int[] s, long pos) {
      int lo = 0;
      int hi = s.length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if ((s[mid] & 0xFFFFFFFFL) < pos) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    }

    /** For reads whose one equality column is an integer: is {@code key} (or null) deleted? */
    boolean deletesLong(long key, boolean isNull) {
      if (groups.length == 0) return false;
      LongKeys keys = longKeys;
      if (keys == null) keys = longKeys = groups[0].longKeys();
      return isNull ? keys.hasNull : keys.contains(key);
    }

    /** For reads whose one equality column is a string: is {@code key} (or null) deleted? */
    boolean deletesString(UTF8String key) {
      return groups.length != 0 && groups[0].keys().contains(key);
    }

    boolean keepsValues(InternalRow row) {
      for (EqualityGroup g : groups) {
        if (g.matches(row)) return false;
      }
      return true;
    }
  }

  /**
   * The deleted keys over one set of equality columns, from every file with that set: read when
   * first asked for, in the form asked for (a set of values, or of longs).
   */
  static final class EqualityGroup {
    private final int[] ordinals;
    private final ValueKind[] kinds;
    private final List<Descriptor.DeleteFile> files;
    private final long[] ids;
    private final Configuration conf;
    private Set<Object> keys;

    EqualityGroup(int[] ordinals, ValueKind[] kinds, List<Descriptor.DeleteFile> files, long[] ids, Configuration conf) {
      this.ordinals = ordinals;
      this.kinds = kinds;
      this.files = files;
      this.ids = ids;
      this.conf = conf;
    }

    Set<Object> keys() {
      Set<Object> k = keys;
      if (k == null) k = keys = DeleteLoader.equalityKeys(files, ids, kinds, conf);
      return k;
    }

    LongKeys longKeys() {
      return DeleteLoader.longKeys(files, ids, kinds, conf);
    }

    boolean matches(InternalRow row) {
      Set<Object> deleted = keys();
      if (ordinals.length == 1) {
        return deleted.contains(kinds[0].fromRow(row, ordinals[0]));
      }
      Object[] key = new Object[ordinals.length];
      for (int i = 0; i < ordinals.length; i++) {
        key[i] = kinds[i].fromRow(row, ordinals[i]);
      }
      return deleted.contains(Arrays.asList(key));
    }
  }
}
