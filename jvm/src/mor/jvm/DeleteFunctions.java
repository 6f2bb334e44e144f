package mor.jvm;

import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The function catalog mor registers as {@code spark.sql.catalog.<name>}. Its functions belong to
 * one read (one token): {@code keep_<token>(file_path, row_index[, equality columns...])}, true
 * for a row no delete removes ({@code keep_long_<token>} and {@code keep_string_<token>}: the
 * same for one integer or string equality column, see {@link KeepKey}); {@code path_<token>},
 * {@code first_row_id_<token>} and {@code data_sequence_<token>} of {@code file_path}, what the
 * table's metadata says of a file ({@link TablePath}, {@link FileNumber}).
 *
 * <p>The read's deletes (which delete files apply to which data file) reach the catalog as the
 * session conf {@code mor.deletes.<token>}, set by mor on the driver just for the time Spark
 * resolves the function. The bound function carries that text to the executors inside the plan,
 * so nothing outlives the read: no static driver state, no file.
 */
public final class DeleteFunctions implements FunctionCatalog {
  static final String CONF_PREFIX = "mor.deletes.";
  private String name;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Identifier[] listFunctions(String[] namespace) {
    return new Identifier[0]; // the functions exist only while a read resolves them
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    String function = ident.name();
    int split = function.lastIndexOf('_');
    if (ident.namespace().length != 0 || split < 0) throw new NoSuchFunctionException(ident);
    String text = SQLConf.get().getConfString(CONF_PREFIX + function.substring(split + 1), null);
    if (text == null) throw new NoSuchFunctionException(ident);
    UnboundReadFunction.Kind kind = UnboundReadFunction.Kind.of(function.substring(0, split));
    if (kind == null) throw new NoSuchFunctionException(ident);
    return new UnboundReadFunction(function, Descriptor.check(text), kind);
  }
}
