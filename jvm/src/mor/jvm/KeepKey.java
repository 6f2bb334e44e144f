package mor.jvm;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code keep(file_path, row_index, key...)} for reads whose equality deletes are all on one
 * column of integers or strings, the common case (an id): Spark calls {@code invoke} directly, no
 * row object, no boxing. An integer key comes as {@code (coalesce(bigint key, 0), key is null)}:
 * Spark skips a magic method whose nullable primitive argument is null, and a null key must
 * still be looked up (a null delete value deletes rows whose value is null).
 */
public abstract class KeepKey extends ReadFunction<Boolean> {
  private static final long serialVersionUID = 1L;

  KeepKey(String name, ReadFunctions read, DataType key) {
    super(name, read, new ValueKind[] {ValueKind.of(key)});
  }

  @Override
  public DataType resultType() {
    return DataTypes.BooleanType;
  }

  /** (file_path, row_index, bigint key or 0, key is null). */
  public static final class OfLong extends KeepKey {
    private static final long serialVersionUID = 1L;

    OfLong(String name, ReadFunctions read) {
      super(name, read, DataTypes.LongType);
    }

    public boolean invoke(UTF8String path, long pos, long key, boolean isNull) {
      FileCursor.Current f = file(path);
      return f.keepsPosition(pos) && !f.deletesLong(key, isNull);
    }

    @Override
    public DataType[] inputTypes() {
      return new DataType[] {DataTypes.StringType, DataTypes.LongType, DataTypes.LongType, DataTypes.BooleanType};
    }
  }

  /** (file_path, row_index, string key). */
  public static final class OfString extends KeepKey {
    private static final long serialVersionUID = 1L;

    OfString(String name, ReadFunctions read) {
      super(name, read, DataTypes.StringType);
    }

    public boolean invoke(UTF8String path, long pos, UTF8String key) {
      FileCursor.Current f = file(path);
      return f.keepsPosition(pos) && !f.deletesString(key);
    }

    @Override
    public DataType[] inputTypes() {
      return new DataType[] {DataTypes.StringType, DataTypes.LongType, DataTypes.StringType};
    }
  }
}
