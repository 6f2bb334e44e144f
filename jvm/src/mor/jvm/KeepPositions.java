package mor.jvm;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code keep(file_path, row_index)} for reads with position deletes and deletion vectors only:
 * Spark calls {@link #invoke} directly in generated code, no row object in between.
 */
public final class KeepPositions extends ReadFunction<Boolean> {
  private static final long serialVersionUID = 1L;

  KeepPositions(String name, ReadFunctions read) {
    super(name, read, new ValueKind[0]);
  }

  /** Spark's magic method: true when no delete removes row {@code pos} of {@code path}. */
  public boolean invoke(UTF8String path, long pos) {
    return file(path).keepsPosition(pos);
  }

  @Override
  public Boolean produceResult(InternalRow row) {
    return invoke(row.getUTF8String(0), row.getLong(1));
  }

  @Override
  public DataType[] inputTypes() {
    return new DataType[] {DataTypes.StringType, DataTypes.LongType};
  }

  @Override
  public DataType resultType() {
    return DataTypes.BooleanType;
  }
}
