package mor.jvm;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * {@code first_row_id_<token>(file_path)} or {@code data_sequence_<token>(file_path)}: what the
 * row's data file's rows inherit for the v3 row lineage columns; null where the metadata has none.
 */
public final class FileNumber extends ReadFunction<Long> {
  private static final long serialVersionUID = 1L;
  private final boolean firstRowId; // else the data sequence number

  FileNumber(String name, ReadFunctions read, boolean firstRowId) {
    super(name, read, null);
    this.firstRowId = firstRowId;
  }

  @Override
  public Long produceResult(InternalRow row) {
    FileCursor.Current f = file(row.getUTF8String(0));
    return firstRowId ? f.firstRowId : f.dataSequence;
  }

  @Override
  public DataType[] inputTypes() {
    return new DataType[] {DataTypes.StringType};
  }

  @Override
  public DataType resultType() {
    return DataTypes.LongType;
  }

  @Override
  public boolean isResultNullable() {
    return true;
  }
}
