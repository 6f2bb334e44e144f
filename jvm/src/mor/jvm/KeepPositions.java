package mor.jvm;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code keep(file_path, row_index)} for reads with position deletes and deletion vectors only:
 * Spark calls {@link #invoke} directly in generated code, no row object in between. The bound
 * function travels with the plan; its per-file state is rebuilt in each task.
 */
public final class KeepPositions implements ScalarFunction<Boolean>, Serializable {
  private static final long serialVersionUID = 1L;

  private final String name;
  private final String descriptor;
  private transient FileCursor cursor;

  KeepPositions(String name, String descriptor) {
    this.name = name;
    this.descriptor = descriptor;
  }

  /** Spark's magic method: true when no delete removes row {@code pos} of {@code path}. */
  public boolean invoke(UTF8String path, long pos) {
    FileCursor c = cursor;
    if (c == null) {
      c = cursor = new FileCursor(descriptor, new ValueKind[0]);
    }
    return c.at(path).keepsPosition(pos);
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

  @Override
  public boolean isResultNullable() {
    return false;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String canonicalName() {
    return "mor." + name;
  }
}
