package mor.jvm;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code keep(file_path, row_index, equality columns...)} for reads with equality deletes: the
 * columns come in as a row (their types vary), checked against the deleted keys of the file's
 * equality delete files after its position deletes.
 */
public final class KeepRows implements ScalarFunction<Boolean>, Serializable {
  private static final long serialVersionUID = 1L;

  private final String name;
  private final String descriptor;
  private final ValueKind[] kinds;
  private final StructType input;
  private transient FileCursor cursor;

  KeepRows(String name, String descriptor, ValueKind[] kinds, StructType input) {
    this.name = name;
    this.descriptor = descriptor;
    this.kinds = kinds;
    this.input = input;
  }

  @Override
  public Boolean produceResult(InternalRow row) {
    FileCursor c = cursor;
    if (c == null) {
      c = cursor = new FileCursor(descriptor, kinds);
    }
    FileCursor.Current file = c.at(row.getUTF8String(0));
    return file.keepsPosition(row.getLong(1)) && file.keepsValues(row);
  }

  @Override
  public DataType[] inputTypes() {
    StructField[] fields = input.fields();
    DataType[] types = new DataType[fields.length];
    for (int i = 0; i < fields.length; i++) {
      types[i] = fields[i].dataType();
    }
    return types;
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
