package mor.jvm;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code keep(file_path, row_index, equality columns...)} for reads with equality deletes: the
 * columns come in as a row (their types vary), checked against the deleted keys of the file's
 * equality delete files after its position deletes.
 */
public final class KeepRows extends ReadFunction<Boolean> {
  private static final long serialVersionUID = 1L;

  private final StructType input;

  KeepRows(String name, ReadFunctions read, ValueKind[] kinds, StructType input) {
    super(name, read, kinds);
    this.input = input;
  }

  @Override
  public Boolean produceResult(InternalRow row) {
    FileCursor.Current f = file(row.getUTF8String(0));
    return f.keepsPosition(row.getLong(1)) && f.keepsValues(row);
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
}
