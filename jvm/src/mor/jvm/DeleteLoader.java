package mor.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.filter2.compat.FilterCompat;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.MessageColumnIO;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.broadcast.Broadcast;

/**
 * Reads delete files on the executor that needs them, and keeps what it read for the other
 * tasks of that JVM ({@link DeleteCache}): a position delete file's rows for one data file (row
 * groups of other files skipped by their file_path statistics), a deletion vector by its offset
 * and length, an equality delete file's keys. Files are opened with the read's Hadoop
 * configuration ({@link ReadConf}).
 */
final class DeleteLoader {
  private static final byte[] MAGIC = {(byte) 0xD1, (byte) 0xD3, (byte) 0x39, (byte) 0x64};
  private DeleteLoader() {}

  /** A read's descriptor, parsed once per JVM while the cache keeps it. */
  static Descriptor descriptor(Broadcast<String> text) {
    return DeleteCache.SHARED.get("D" + text.id(), k -> Descriptor.parse(text.value()), d -> d.sizeInBytes);
  }

  /** The positions the file's position delete files and deletion vector remove, or null. */
  static PositionSet positions(Descriptor.DataFile file, Configuration conf) {
    StringBuilder key = new StringBuilder("P\n").append(file.tablePath);
    boolean any = false;
    for (Descriptor.DeleteFile d : file.deletes) {
      if (d.kind != Descriptor.Kind.EQUALITY) {
        key.append('\n').append(d.path).append('@').append(d.offset);
        any = true;
      }
    }
    if (!any) return null;
    return DeleteCache.SHARED.get(key.toString(), k -> readPositions(file, conf), PositionSet::sizeInBytes);
  }

  /** The deleted keys (a value, or a list of values) of equality delete files over {@code ids}. */
  static Set<Object> equalityKeys(List<Descriptor.DeleteFile> files, long[] ids, ValueKind[] kinds, Configuration conf) {
    return DeleteCache.SHARED.get("K" + keysKey(files, ids), k -> {
      Set<Object> keys = new HashSet<>();
      for (Descriptor.DeleteFile d : files) readKeys(d, ids, kinds, keys, conf);
      return keys;
    }, DeleteCache::keysSize);
  }

  /**
   * The same keys of one integer column as a {@link LongKeys}, built once per JVM: every data
   * file the delete files apply to shares it (a million keys are not hashed again per file).
   */
  static LongKeys longKeys(List<Descriptor.DeleteFile> files, long[] ids, ValueKind[] kinds, Configuration conf) {
    String key = "L" + keysKey(files, ids);
    return DeleteCache.SHARED.get(key, k -> LongKeys.of(equalityKeys(files, ids, kinds, conf)), LongKeys::sizeInBytes);
  }

  private static String keysKey(List<Descriptor.DeleteFile> files, long[] ids) {
    StringBuilder key = new StringBuilder(Arrays.toString(ids));
    for (Descriptor.DeleteFile d : files) key.append('\n').append(d.path);
    return key.toString();
  }

  private static PositionSet readPositions(Descriptor.DataFile file, Configuration conf) {
    PositionSet set = new PositionSet();
    for (Descriptor.DeleteFile d : file.deletes) {
      try {
        if (d.kind == Descriptor.Kind.VECTOR) {
          readVector(d, set, conf);
        } else if (d.kind == Descriptor.Kind.POSITION) {
          readPositionFile(d, file.tablePath, set, conf);
        } else if (d.kind == Descriptor.Kind.SCOPED_POSITION) {
          readScopedPositionFile(d, set, conf);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("mor could not read delete file " + d.path, e);
      }
    }
    set.optimize();
    set.sorted(); // built now, so the cache weighs it
    return set;
  }

  private static void readVector(Descriptor.DeleteFile d, PositionSet set, Configuration conf) throws IOException {
    byte[] blob = DeleteFileInput.range(d.path, d.offset, Math.toIntExact(d.length), conf);
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

  private static void readPositionFile(Descriptor.DeleteFile d, String dataPath, PositionSet set, Configuration conf)
      throws IOException {
    FilterCompat.Filter only = FilterCompat.get(FilterApi.eq(FilterApi.binaryColumn("file_path"), Binary.fromString(dataPath)));
    try (ParquetFileReader reader = open(d, only, conf)) {
      MessageType schema = reader.getFileMetaData().getSchema();
      MessageType columns = new MessageType("position_deletes", schema.getType("file_path"), schema.getType("pos"));
      forEachRow(reader, schema, columns, only, row -> set.add(row.getLong(1, 0)));
    }
  }

  /**
   * A position delete file all of whose rows are for this data file: its pos column alone, read
   * value by value (no file_path to compare, no records assembled): at one small delete file per
   * data file, this is what a lake's read pays per file besides Spark's own reading.
   */
  private static void readScopedPositionFile(Descriptor.DeleteFile d, PositionSet set, Configuration conf) throws IOException {
    try (ParquetFileReader reader = open(d, FilterCompat.NOOP, conf)) {
      MessageType columns = new MessageType("position_deletes", reader.getFileMetaData().getSchema().getType("pos"));
      reader.setRequestedSchema(columns);
      ColumnDescriptor pos = columns.getColumns().get(0);
      GroupConverter root = new GroupRecordConverter(columns).getRootConverter();
      String createdBy = reader.getFileMetaData().getCreatedBy();
      for (PageReadStore pages = reader.readNextRowGroup(); pages != null; pages = reader.readNextRowGroup()) {
        ColumnReader values = new ColumnReadStoreImpl(pages, root, columns, createdBy).getColumnReader(pos);
        for (long i = 0, n = pages.getRowCount(); i < n; i++) { // one value a row: a top-level column
          if (values.getCurrentDefinitionLevel() == pos.getMaxDefinitionLevel()) set.add(values.getLong());
          values.consume();
        }
      }
    }
  }

  private static void readKeys(Descriptor.DeleteFile d, long[] ids, ValueKind[] kinds, Set<Object> keys, Configuration conf) {
    try (ParquetFileReader reader = open(d, FilterCompat.NOOP, conf)) {
      MessageType schema = reader.getFileMetaData().getSchema();
      Type[] fields = new Type[ids.length];
      for (int i = 0; i < ids.length; i++) fields[i] = fieldById(schema, ids[i], d.path);
      forEachRow(reader, schema, new MessageType("equality_deletes", fields), FilterCompat.NOOP, row -> {
        if (ids.length == 1) {
          keys.add(kinds[0].fromParquet(row, 0, fields[0].asPrimitiveType()));
        } else {
          Object[] key = new Object[ids.length];
          for (int i = 0; i < ids.length; i++) key[i] = kinds[i].fromParquet(row, i, fields[i].asPrimitiveType());
          keys.add(Arrays.asList(key));
        }
      });
    } catch (IOException e) {
      throw new UncheckedIOException("mor could not read delete file " + d.path, e);
    }
  }

  /** A Parquet file opened with the read's Hadoop configuration ({@link DeleteFileInput}). */
  private static ParquetFileReader open(Descriptor.DeleteFile d, FilterCompat.Filter filter, Configuration conf) throws IOException {
    // HadoopReadOptions, not ParquetReader's builder: that makes a new Configuration per file,
    // which parses Hadoop's default XML resources again.
    ParquetReadOptions options = HadoopReadOptions.builder(conf).withRecordFilter(filter).build();
    return ParquetFileReader.open(DeleteFileInput.parquet(d.path, d.length, conf), options);
  }

  /** Each row of {@code columns} that passes {@code filter}, row group by row group. */
  private static void forEachRow(
      ParquetFileReader reader, MessageType schema, MessageType columns, FilterCompat.Filter filter, Consumer<Group> action)
      throws IOException {
    reader.setRequestedSchema(columns);
    MessageColumnIO io = new ColumnIOFactory(reader.getFileMetaData().getCreatedBy()).getColumnIO(columns, schema);
    for (PageReadStore pages = reader.readNextFilteredRowGroup(); pages != null; pages = reader.readNextFilteredRowGroup()) {
      RecordReader<Group> records = io.getRecordReader(pages, new GroupRecordConverter(columns), filter);
      for (long i = 0, n = pages.getRowCount(); i < n; i++) {
        Group row = records.read();
        if (row != null && !records.shouldSkipCurrentRecord()) action.accept(row);
      }
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
}
