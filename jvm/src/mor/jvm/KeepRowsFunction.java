package mor.jvm;

import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** {@code keep_<token>(file_path, row_index[, equality columns...])} before Spark binds it. */
final class KeepRowsFunction implements UnboundFunction {
  private static final long serialVersionUID = 1L;

  /** The arguments after (file_path, row_index): any columns, or one key in a fast form. */
  enum Shape { ROWS, LONG_KEY, STRING_KEY }

  private final String name;
  private final String descriptor;
  private final Shape shape;

  KeepRowsFunction(String name, String descriptor, Shape shape) {
    this.name = name;
    this.descriptor = descriptor;
    this.shape = shape;
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    StructField[] fields = inputType.fields();
    if (fields.length < 2 || !(fields[0].dataType() instanceof StringType) || !(fields[1].dataType() instanceof LongType)) {
      throw new UnsupportedOperationException(name + " takes (file_path string, row_index bigint, equality columns...)");
    }
    if (shape == Shape.LONG_KEY) {
      if (fields.length != 4) throw new UnsupportedOperationException(name + " takes (file_path, row_index, bigint key, key is null)");
      return new KeepKey.OfLong(name, descriptor);
    }
    if (shape == Shape.STRING_KEY) {
      if (fields.length != 3) throw new UnsupportedOperationException(name + " takes (file_path, row_index, string key)");
      return new KeepKey.OfString(name, descriptor);
    }
    if (fields.length == 2) {
      return new KeepPositions(name, descriptor);
    }
    ValueKind[] kinds = new ValueKind[fields.length - 2];
    for (int i = 2; i < fields.length; i++) {
      kinds[i - 2] = ValueKind.of(fields[i].dataType());
    }
    return new KeepRows(name, descriptor, kinds, inputType);
  }

  @Override
  public String description() {
    return name + "(file_path, row_index, equality columns...): false for a row a delete file of this read removes";
  }

  @Override
  public String name() {
    return name;
  }
}
