package mor.jvm;

import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** A function of one read, {@code <kind>_<token>}, before Spark binds it to its arguments. */
final class UnboundReadFunction implements UnboundFunction {
  private static final long serialVersionUID = 1L;

  /** What the function answers, and the arguments it takes. */
  enum Kind {
    KEEP("keep", "(file_path string, row_index bigint, equality columns...)"),
    KEEP_LONG("keep_long", "(file_path string, row_index bigint, key bigint (0 when null), key is null)"),
    KEEP_STRING("keep_string", "(file_path string, row_index bigint, key string)"),
    PATH("path", "(file_path string)"),
    FIRST_ROW_ID("first_row_id", "(file_path string)"),
    DATA_SEQUENCE("data_sequence", "(file_path string)");

    final String prefix;
    final String arguments;

    Kind(String prefix, String arguments) {
      this.prefix = prefix;
      this.arguments = arguments;
    }

    static Kind of(String prefix) {
      for (Kind k : values()) {
        if (k.prefix.equals(prefix)) return k;
      }
      return null;
    }
  }

  private final String name;
  private final ReadFunctions read;
  private final Kind kind;

  UnboundReadFunction(String name, ReadFunctions read, Kind kind) {
    this.name = name;
    this.read = read;
    this.kind = kind;
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    StructField[] fields = inputType.fields();
    boolean located = fields.length >= 2 && fields[0].dataType() instanceof StringType && fields[1].dataType() instanceof LongType;
    switch (kind) {
      case KEEP:
        if (!located) break;
        if (fields.length == 2) return new KeepPositions(name, read);
        ValueKind[] kinds = new ValueKind[fields.length - 2];
        for (int i = 2; i < fields.length; i++) kinds[i - 2] = ValueKind.of(fields[i].dataType());
        return new KeepRows(name, read, kinds, inputType);
      case KEEP_LONG:
        if (located && fields.length == 4) return new KeepKey.OfLong(name, read);
        break;
      case KEEP_STRING:
        if (located && fields.length == 3) return new KeepKey.OfString(name, read);
        break;
      default:
        if (fields.length != 1 || !(fields[0].dataType() instanceof StringType)) break;
        return kind == Kind.PATH ? new TablePath(name, read) : new FileNumber(name, read, kind == Kind.FIRST_ROW_ID);
    }
    throw new UnsupportedOperationException(name + " takes " + kind.arguments + ", not " + simple(fields));
  }

  private static String simple(StructField[] fields) {
    StringBuilder out = new StringBuilder("(");
    for (int i = 0; i < fields.length; i++) {
      DataType t = fields[i].dataType();
      out.append(i == 0 ? "" : ", ").append(t.simpleString());
    }
    return out.append(')').toString();
  }

  @Override
  public String description() {
    return name + kind.arguments + ": mor's deletes and file metadata for one read";
  }

  @Override
  public String name() {
    return name;
  }
}
