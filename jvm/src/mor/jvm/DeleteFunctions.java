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
 * for a row no delete removes; {@code path_<token>}, {@code first_row_id_<token>} and
 * {@code data_sequence_<token>} of {@code file_path}, what the table's metadata says of a file
 * (see {@link FileValue}).
 *
 * <p>The read's deletes (which delete files apply to which data file) reach the catalog as the
 * session conf {@code mor.deletes.<token>}, set by mor on the driver just for the time Spark
 * resolves the function. The bound function carries that text to the executors inside the plan,
 * so nothing outlives the read: no static driver state, no file.
 */
public final class DeleteFunctions implements FunctionCatalog {
  static final String CONF_PREFIX = "mor.deletes.";
  static final String KEEP = "keep_";
  static final String PATH = "path_";
  static final String FIRST_ROW_ID = "first_row_id_";
  static final String DATA_SEQUENCE = "data_sequence_";

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
    if (ident.namespace().length == 0) {
      if (function.startsWith(KEEP)) return new KeepRowsFunction(function, descriptor(ident, KEEP));
      if (function.startsWith(PATH)) return new FileValue(function, descriptor(ident, PATH), FileValue.Kind.PATH);
      if (function.startsWith(FIRST_ROW_ID)) {
        return new FileValue(function, descriptor(ident, FIRST_ROW_ID), FileValue.Kind.FIRST_ROW_ID);
      }
      if (function.startsWith(DATA_SEQUENCE)) {
        return new FileValue(function, descriptor(ident, DATA_SEQUENCE), FileValue.Kind.DATA_SEQUENCE);
      }
    }
    throw new NoSuchFunctionException(ident);
  }

  /** The descriptor of the read the function's token names, while mor has it in the conf. */
  private static String descriptor(Identifier ident, String prefix) throws NoSuchFunctionException {
    String token = ident.name().substring(prefix.length());
    String text = SQLConf.get().getConfString(CONF_PREFIX + token, null);
    if (text == null) throw new NoSuchFunctionException(ident);
    return Descriptor.check(text);
  }

  /** The catalog's version, asked by mor to check that the jar it added is the one it ships. */
  public static String version() {
    return Descriptor.VERSION;
  }
}
