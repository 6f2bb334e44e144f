package mor.jvm;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The deletes of one read, as mor's driver wrote them: which delete files apply to which data
 * file. Text, one record per line, fields separated by tabs, paths percent-escaped for '%', tab,
 * CR and LF:
 *
 * <pre>
 * mor-deletes 1
 * A  field id of each equality argument after (file_path, row_index), in order
 * P  path  [1]  [size]              a position delete file (Parquet); 1: all its rows are for
 *                                    the one data file it applies to (referenced_data_file)
 * V  path  offset  length            a deletion vector blob in a Puffin file
 * E  path  field ids (comma)  [size] an equality delete file (Parquet)
 * F  data path  table's data path  indexes of the P/V/E lines that apply (comma)
 *    first row id  data sequence number   (v3 row lineage; empty when the metadata has none)
 * </pre>
 *
 * A size is the file's bytes as its manifest says: the file is opened without asking the store
 * (a HEAD request on object storage). Paths are the ones Spark's reader takes
 * ({@code /tmp/a b.parquet}, {@code s3a://b/k}); the table's data path is the location as delete
 * files spell it.
 */
final class Descriptor {
  static final String VERSION = "1";
  static final String HEADER = "mor-deletes\t" + VERSION;

  final long[] argFieldIds;
  final List<DeleteFile> deletes = new ArrayList<>();
  final Map<String, DataFile> files = new HashMap<>();
  long sizeInBytes; // estimated heap bytes of the parse, for DeleteCache

  enum Kind { POSITION, SCOPED_POSITION, VECTOR, EQUALITY }

  static final class DeleteFile {
    final int index;
    final Kind kind;
    final String path;
    final long offset;
    final long length; // a vector's blob length; a Parquet file's size (0: unknown)
    final long[] fieldIds;

    DeleteFile(int index, Kind kind, String path, long offset, long length, long[] fieldIds) {
      this.index = index;
      this.kind = kind;
      this.path = path;
      this.offset = offset;
      this.length = length;
      this.fieldIds = fieldIds;
    }
  }

  static final class DataFile {
    final String path;
    final String tablePath;
    final DeleteFile[] deletes;
    final Long firstRowId;
    final Long dataSequence;

    DataFile(String path, String tablePath, DeleteFile[] deletes, Long firstRowId, Long dataSequence) {
      this.path = path;
      this.tablePath = tablePath;
      this.deletes = deletes;
      this.firstRowId = firstRowId;
      this.dataSequence = dataSequence;
    }
  }

  /** The text, when its header is one this jar reads. */
  static String check(String text) {
    if (!text.startsWith(HEADER + "\n")) {
      String first = text.split("\n", 2)[0];
      throw new IllegalArgumentException("mor's delete functions read '" + HEADER + "', not '" + first + "'");
    }
    return text;
  }

  static Descriptor parse(String text) {
    check(text);
    String[] lines = text.split("\n");
    long[] args = new long[0];
    List<String[]> fileLines = new ArrayList<>();
    Descriptor d = null;
    for (int i = 1; i < lines.length; i++) {
      String[] f = lines[i].split("\t", -1);
      switch (f[0]) {
        case "A":
          args = ids(f, 1);
          d = new Descriptor(args);
          break;
        case "P":
          Kind kind = f.length > 2 && f[2].equals("1") ? Kind.SCOPED_POSITION : Kind.POSITION;
          need(d).deletes.add(new DeleteFile(d.deletes.size(), kind, unescape(f[1]), 0, size(f, 3), new long[0]));
          break;
        case "V":
          need(d).deletes.add(new DeleteFile(
              d.deletes.size(), Kind.VECTOR, unescape(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), new long[0]));
          break;
        case "E":
          need(d).deletes.add(
              new DeleteFile(d.deletes.size(), Kind.EQUALITY, unescape(f[1]), 0, size(f, 3), ids(f[2].split(","), 0)));
          break;
        case "F":
          fileLines.add(f);
          break;
        default:
          throw new IllegalArgumentException("mor's delete descriptor has an unknown record '" + f[0] + "'");
      }
    }
    Descriptor result = need(d);
    for (String[] f : fileLines) {
      String path = unescape(f[1]);
      String[] picked = f[3].isEmpty() ? new String[0] : f[3].split(",");
      DeleteFile[] deletes = new DeleteFile[picked.length];
      for (int i = 0; i < picked.length; i++) {
        deletes[i] = result.deletes.get(Integer.parseInt(picked[i]));
      }
      result.files.put(fileKey(path), new DataFile(path, unescape(f[2]), deletes, number(f, 4), number(f, 5)));
    }
    // A data file's line holds two paths and becomes three strings (as given, the table's, the
    // key), one byte a character; then the objects, arrays and map nodes around them.
    result.sizeInBytes = 3L * text.length() / 2 + 260L * result.files.size() + 100L * result.deletes.size();
    return result;
  }

  private Descriptor(long[] argFieldIds) {
    this.argFieldIds = argFieldIds;
  }

  private static long size(String[] fields, int i) {
    return i < fields.length && !fields[i].isEmpty() ? Long.parseLong(fields[i]) : 0;
  }

  private static Long number(String[] fields, int i) {
    return i < fields.length && !fields[i].isEmpty() ? Long.valueOf(fields[i]) : null;
  }

  private static Descriptor need(Descriptor d) {
    if (d == null) {
      throw new IllegalArgumentException("mor's delete descriptor names its equality arguments (A) first");
    }
    return d;
  }

  private static long[] ids(String[] fields, int from) {
    int n = 0;
    for (int i = from; i < fields.length; i++) {
      if (!fields[i].isEmpty()) n++;
    }
    long[] out = new long[n];
    int j = 0;
    for (int i = from; i < fields.length; i++) {
      if (!fields[i].isEmpty()) out[j++] = Long.parseLong(fields[i]);
    }
    return out;
  }

  static String unescape(String s) {
    if (s.indexOf('%') < 0) return s;
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        out.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /**
   * A path Spark's reader was given, as Spark reports it in {@code _metadata.file_path}: the
   * URI of the path, percent-encoded by Java ({@code file:/tmp/a%20b.parquet}).
   */
  static String fileKey(String path) {
    try {
      int scheme = path.indexOf("://");
      if (scheme < 0) {
        return new URI("file", null, path, null, null).toString();
      }
      String rest = path.substring(scheme + 3);
      int slash = rest.indexOf('/');
      String authority = slash < 0 ? rest : rest.substring(0, slash);
      String key = slash < 0 ? "/" : rest.substring(slash);
      return new URI(path.substring(0, scheme), authority, key, null, null).toString();
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("not a path Spark reads: " + path, e);
    }
  }
}
