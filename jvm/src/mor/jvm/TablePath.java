package mor.jvm;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/** {@code path_<token>(file_path)}: the row's data file as the table's metadata spells it. */
public final class TablePath extends ReadFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  TablePath(String name, ReadFunctions read) {
    super(name, read, null);
  }

  public UTF8String invoke(UTF8String path) {
    return file(path).tablePath;
  }

  @Override
  public UTF8String produceResult(InternalRow row) {
    return invoke(row.getUTF8String(0));
  }

  @Override
  public DataType[] inputTypes() {
    return new DataType[] {DataTypes.StringType};
  }

  @Override
  public DataType resultType() {
    return DataTypes.StringType;
  }
}
