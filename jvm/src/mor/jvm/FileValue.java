package mor.jvm;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * What the table's metadata says about the data file a row comes from, by the path Spark
 * reports: {@code path_<token>} its location as the table spells it (what mor's DML names a
 * file by), {@code first_row_id_<token>} and {@code data_sequence_<token>} the values its rows
 * inherit for the v3 row lineage columns (null where the metadata has none).
 */
final class FileValue implements UnboundFunction {
  private static final long serialVersionUID = 1L;

  enum Kind { PATH, FIRST_ROW_ID, DATA_SEQUENCE }

  private final String name;
  private final String descriptor;
  private final Kind kind;

  FileValue(String name, String descriptor, Kind kind) {
    this.name = name;
    this.descriptor = descriptor;
    this.kind = kind;
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    StructField[] fields = inputType.fields();
    if (fields.length != 1 || !(fields[0].dataType() instanceof StringType)) {
      throw new UnsupportedOperationException(name + " takes (file_path string)");
    }
    return kind == Kind.PATH ? new TablePath(name, descriptor) : new FileNumber(name, descriptor, kind);
  }

  @Override
  public String description() {
    return name + "(file_path): what the table's metadata says of the row's data file";
  }

  @Override
  public String name() {
    return name;
  }

  /** The file's location as the table spells it. */
  public static final class TablePath implements ScalarFunction<UTF8String>, Serializable {
    private static final long serialVersionUID = 1L;
    private final String name;
    private final String descriptor;
    private transient FileCursor cursor;

    TablePath(String name, String descriptor) {
      this.name = name;
      this.descriptor = descriptor;
    }

    public UTF8String invoke(UTF8String path) {
      FileCursor c = cursor;
      if (c == null) c = cursor = new FileCursor(descriptor, null);
      return c.at(path).tablePath;
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

  /** The file's first row id or data sequence number; null where the metadata has none. */
  public static final class FileNumber implements ScalarFunction<Long>, Serializable {
    private static final long serialVersionUID = 1L;
    private final String name;
    private final String descriptor;
    private final Kind kind;
    private transient FileCursor cursor;

    FileNumber(String name, String descriptor, Kind kind) {
      this.name = name;
      this.descriptor = descriptor;
      this.kind = kind;
    }

    @Override
    public Long produceResult(InternalRow row) {
      FileCursor c = cursor;
      if (c == null) c = cursor = new FileCursor(descriptor, null);
      FileCursor.Current file = c.at(row.getUTF8String(0));
      return kind == Kind.FIRST_ROW_ID ? file.firstRowId : file.dataSequence;
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
    public String name() {
      return name;
    }

    @Override
    public String canonicalName() {
      return "mor." + name;
    }
  }
}
