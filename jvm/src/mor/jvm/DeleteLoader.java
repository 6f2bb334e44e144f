package mor.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.filter2.compat.FilterCompat;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.api.InitContext;
import org.apache.parquet.hadoop.api.ReadSupport;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordMaterializer;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.SparkEnv;
import scala.Tuple2;

/**
 * Reads delete files on the executor that needs them, and keeps what it read for the other
 * tasks of that JVM (a few splits of one file, a delete file shared by many data files): a
 * position delete file's rows for one data file (row groups of other files skipped by their
 * file_path statistics), a deletion vector by its offset and length, an equality delete file's
 * keys.
 */
final class DeleteLoader {
  private static final int CACHED = 256;
  private static final byte[] MAGIC = {(byte) 0xD1, (byte) 0xD3, (byte) 0x39, (byte) 0x64};
  private static final Map<String, Descriptor> DESCRIPTORS = lru(16);
  private static final Map<String, PositionSet> POSITIONS = lru(CACHED);
  private static final Map<String, Set<Object>> KEYS = lru(CACHED);
  private static final Map<String, LongKeys> LONG_KEYS = lru(CACHED);
  private static final Map<List<Object>, Object> LOADING = new ConcurrentHashMap<>();
  private static Configuration conf;

  private DeleteLoader() {}

  static Descriptor descriptor(String text) {
    return cached(DESCRIPTORS, text, Descriptor::parse);
  }

  /** The positions the file's position delete files and deletion vector remove, or null. */
  static PositionSet positions(Descriptor.DataFile file) {
    StringBuilder key = new StringBuilder(file.tablePath);
    boolean any = false;
    for (Descriptor.DeleteFile d : file.deletes) {
      if (d.kind != Descriptor.Kind.EQUALITY) {
        key.append('\n').append(d.path).append('@').append(d.offset);
        any = true;
      }
    }
    if (!any) return null;
    return cached(POSITIONS, key.toString(), k -> readPositions(file));
  }

  /** The deleted keys (a value, or a list of values) of equality delete files over {@code ids}. */
  static Set<Object> equalityKeys(List<Descriptor.DeleteFile> files, long[] ids, ValueKind[] kinds) {
    return cached(KEYS, keysKey(files, ids), k -> {
      Set<Object> keys = new HashSet<>();
      for (Descriptor.DeleteFile d : files) readKeys(d, ids, kinds, keys);
      return keys;
    });
  }

  /**
   * The same keys of one integer column as a {@link LongKeys}, built once per JVM: every data
   * file the delete files apply to shares it (a million keys are not hashed again per file).
   */
  static LongKeys longKeys(List<Descriptor.DeleteFile> files, long[] ids, ValueKind[] kinds) {
    return cached(LONG_KEYS, keysKey(files, ids), k -> LongKeys.of(equalityKeys(files, ids, kinds)));
  }

  private static String keysKey(List<Descriptor.DeleteFile> files, long[] ids) {
    StringBuilder key = new StringBuilder(Arrays.toString(ids));
    for (Descriptor.DeleteFile d : files) key.append('\n').append(d.path);
    return key.toString();
  }

  private static PositionSet readPositions(Descriptor.DataFile file) {
    PositionSet set = new PositionSet();
    for (Descriptor.DeleteFile d : file.deletes) {
      try {
        if (d.kind == Descriptor.Kind.VECTOR) {
          readVector(d, set);
        } else if (d.kind == Descriptor.Kind.POSITION) {
          readPositionFile(d, file.tablePath, set);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("mor could not read delete file " + d.path, e);
      }
    }
    set.optimize();
    return set;
  }

  private static void readVector(Descriptor.DeleteFile d, PositionSet set) throws IOException {
    Path path = new Path(d.path);
    byte[] blob = new byte[Math.toIntExact(d.length)];
    FileSystem fs = path.getFileSystem(conf());
    try (FSDataInputStream in = fs.open(path)) {
      in.readFully(d.offset, blob);
    }
    ByteBuffer b = ByteBuffer.wrap(blob);
    int length = b.getInt(0);
    if (blob.length < 12 || length != blob.length - 8 || !Arrays.equals(Arrays.copyOfRange(blob, 4, 8), MAGIC)) {
      throw new IOException("not a deletion-vector-v1 blob at " + d.offset + " (" + d.length + " bytes)");
    }
    CRC32 crc = new CRC32();
    crc.update(blob, 4, length);
    if ((int) crc.getValue() != b.getInt(blob.length - 4)) {
      throw new IOException("the deletion vector's checksum does not match at " + d.offset);
    }
    set.addPortable64(ByteBuffer.wrap(blob, 8, length - 4));
  }

  private static void readPositionFile(Descriptor.DeleteFile d, String dataPath, PositionSet set) throws IOException {
    FilterCompat.Filter only = FilterCompat.get(FilterApi.eq(FilterApi.binaryColumn("file_path"), Binary.fromString(dataPath)));
    ReadSupport<Group> columns = new Projection(schema -> new MessageType("position_deletes", schema.getType("file_path"), schema.getType("pos")));
    try (ParquetReader<Group> reader = ParquetReader.builder(columns, new Path(d.path)).withConf(conf()).withFilter(only).build()) {
      for (Group row = reader.read(); row != null; row = reader.read()) {
        set.add(row.getLong(1, 0));
      }
    }
  }

  private static void readKeys(Descriptor.DeleteFile d, long[] ids, ValueKind[] kinds, Set<Object> keys) {
    Type[][] picked = new Type[1][];
    ReadSupport<Group> columns = new Projection(schema -> {
      Type[] fields = new Type[ids.length];
      for (int i = 0; i < ids.length; i++) fields[i] = fieldById(schema, ids[i], d.path);
      picked[0] = fields;
      return new MessageType("equality_deletes", fields);
    });
    try (ParquetReader<Group> reader = ParquetReader.builder(columns, new Path(d.path)).withConf(conf()).build()) {
      for (Group row = reader.read(); row != null; row = reader.read()) {
        if (ids.length == 1) {
          keys.add(kinds[0].fromParquet(row, 0, picked[0][0].asPrimitiveType()));
        } else {
          Object[] key = new Object[ids.length];
          for (int i = 0; i < ids.length; i++) key[i] = kinds[i].fromParquet(row, i, picked[0][i].asPrimitiveType());
          keys.add(Arrays.asList(key));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("mor could not read delete file " + d.path, e);
    }
  }

  private static Type fieldById(MessageType schema, long id, String path) {
    for (Type field : schema.getFields()) {
      if (field.getId() != null && field.getId().intValue() == id) {
        if (!field.isPrimitive()) break;
        return field;
      }
    }
    throw new IllegalStateException("equality delete file " + path + " has no primitive column with field id " + id);
  }

  /** The session's Hadoop settings ({@code spark.hadoop.*}), as Spark's own scan sees them. */
  static synchronized Configuration conf() {
    if (conf == null) {
      Configuration c = new Configuration();
      SparkEnv env = SparkEnv.get();
      if (env != null) {
        for (Tuple2<String, String> entry : env.conf().getAll()) {
          if (entry._1().startsWith("spark.hadoop.")) c.set(entry._1().substring("spark.hadoop.".length()), entry._2());
        }
      }
      conf = c;
    }
    return conf;
  }

  /**
   * The cached value, else loaded once: tasks asking for the same key at once (every task's
   * first file needs the same equality deletes) wait for one load, while loads of other keys go
   * on beside it.
   */
  private static <V> V cached(Map<String, V> cache, String key, Function<String, V> load) {
    V hit = cache.get(key);
    if (hit != null) return hit;
    List<Object> loading = Arrays.asList(System.identityHashCode(cache), key);
    Object lock = LOADING.computeIfAbsent(loading, k -> new Object());
    try {
      synchronized (lock) {
        hit = cache.get(key);
        if (hit != null) return hit;
        V value = load.apply(key);
        cache.put(key, value);
        return value;
      }
    } finally {
      LOADING.remove(loading, lock);
    }
  }

  private static <V> Map<String, V> lru(int capacity) {
    return Collections.synchronizedMap(new LinkedHashMap<String, V>(16, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
        return size() > capacity;
      }
    });
  }

  /** Reads the columns {@code project} picks from a file's schema, as example Groups. */
  private static final class Projection extends ReadSupport<Group> {
    private final Function<MessageType, MessageType> project;

    Projection(Function<MessageType, MessageType> project) {
      this.project = project;
    }

    @Override
    public ReadContext init(InitContext context) {
      return new ReadContext(project.apply(context.getFileSchema()));
    }

    @Override
    @SuppressWarnings("deprecation") // its replacement is not in the Parquet of Spark 3.5
    public RecordMaterializer<Group> prepareForRead(
        Configuration configuration, Map<String, String> metadata, MessageType fileSchema, ReadContext context) {
      return new GroupRecordConverter(context.getRequestedSchema());
    }
  }
}
