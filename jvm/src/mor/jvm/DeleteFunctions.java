package mor.jvm;

import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
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
 * resolves the functions. The catalog broadcasts that text once per read ({@link ReadFunctions});
 * the bound functions carry only the broadcast's handle, so a task's payload does not grow with
 * the read's files, and each executor fetches and parses the text once ({@link DeleteLoader}).
 * A second broadcast carries the Hadoop configuration the delete files are opened with, taken
 * from the session as the functions resolve ({@link ReadConf}). The broadcasts live as long as a
 * plan holds the functions: Spark's cleaner removes them after the DataFrame is gone.
 */
public final class DeleteFunctions implements FunctionCatalog {
  static final String CONF_PREFIX = "mor.deletes.";
  private String name;
  // The read whose functions are being resolved, by token: its functions share one broadcast.
  // Weak, so that the catalog does not keep a finished read's broadcast from Spark's cleaner.
  private final Map<String, WeakReference<ReadFunctions>> reads = new HashMap<>();

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
    UnboundReadFunction.Kind kind = UnboundReadFunction.Kind.of(function.substring(0, split));
    SparkSession session = SparkSession.active();
    ReadFunctions read = kind == null ? null : read(session, function.substring(split + 1));
    if (read == null) throw new NoSuchFunctionException(ident);
    return new UnboundReadFunction(function, read, kind);
  }

  private synchronized ReadFunctions read(SparkSession session, String token) {
    reads.values().removeIf(r -> r.get() == null);
    WeakReference<ReadFunctions> known = reads.get(token);
    ReadFunctions read = known == null ? null : known.get();
    if (read != null) return read;
    RuntimeConfig conf = session.conf();
    String text = conf.get(CONF_PREFIX + token, null);
    if (text == null) return null;
    long cacheBytes = DeleteCache.parseBytes(conf.get(DeleteCache.BYTES_CONF, Long.toString(DeleteCache.DEFAULT_BYTES)));
    JavaSparkContext context = JavaSparkContext.fromSparkContext(session.sparkContext());
    Broadcast<String> deletes = context.broadcast(Descriptor.check(text));
    read = new ReadFunctions(deletes, context.broadcast(ReadConf.of(session)), cacheBytes);
    reads.put(token, new WeakReference<>(read));
    return read;
  }
}
