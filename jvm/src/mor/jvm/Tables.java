package mor.jvm;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.DataSource$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The tables of one mor catalog for Spark SQL, read through mor's Python data source: the catalog
 * mor.spark.register_tables names {@code spark.sql.catalog.<name>}, with the mor catalog's
 * settings as its options ({@code warehouse}, {@code uri}, file access properties), and makes its
 * temporary views over ({@code SELECT * FROM <name>.db.events}).
 *
 * <p>Spark keeps the read a Python data source planned with the relation it planned it for, and a
 * view made from a DataFrame keeps that relation for good, so such a view reads one snapshot
 * forever. Each lookup here hands Spark a new relation of format "mor" (as {@code
 * spark.read.format("mor").options(...).load("db.events")} makes), which Spark looks up at every
 * query that names the table: every query is planned on the table's current snapshot. {@code
 * VERSION AS OF <snapshot id>} and {@code TIMESTAMP AS OF} read the snapshot they name.
 *
 * <p>Reads only: tables are created, changed and dropped through mor, and listed by mor's catalog
 * (its Python side), so those calls are refused here.
 */
public final class Tables implements TableCatalog {
  static final String FORMAT = "mor";
  private String name;
  private Map<String, String> options;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    this.options = new HashMap<>(options.asCaseSensitiveMap());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Table loadTable(Identifier ident) {
    return load(ident, null, null);
  }

  @Override
  public Table loadTable(Identifier ident, String version) {
    return load(ident, "snapshot-id", version);
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) {
    return load(ident, "as-of-timestamp", Long.toString(Math.floorDiv(timestamp, 1000L))); // micro- to milliseconds
  }

  /** A new relation of format "mor" on the table {@code ident} names, planned when Spark reads it. */
  private Table load(Identifier ident, String key, String value) {
    Map<String, String> read = new HashMap<>(options);
    read.put("path", morName(ident));
    if (key != null) read.put(key, value);
    TableProvider provider = DataSource$.MODULE$.lookupDataSourceV2(FORMAT, SQLConf.get()).get();
    CaseInsensitiveStringMap map = new CaseInsensitiveStringMap(read);
    StructType schema = provider.inferSchema(map);
    return provider.getTable(schema, provider.inferPartitioning(map), read);
  }

  /** {@code db.events}: mor's spelling, whose parts keep a dot of their own escaped as %2E. */
  static String morName(Identifier ident) {
    StringBuilder text = new StringBuilder();
    for (String part : ident.namespace()) text.append(part).append('.');
    return text.append(ident.name()).toString();
  }

  @Override
  public Identifier[] listTables(String[] namespace) {
    throw refused("list tables (mor's catalog lists them: catalog.list_tables(namespace))");
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    throw refused("create tables (mor does: catalog.create_table, or df.write.format(\"mor\"))");
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) {
    throw refused("change tables (mor does)");
  }

  @Override
  public boolean dropTable(Identifier ident) {
    throw refused("drop tables (mor's catalog does: catalog.drop_table)");
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    throw refused("rename tables (mor's catalog does: catalog.rename_table)");
  }

  private UnsupportedOperationException refused(String what) {
    return new UnsupportedOperationException("catalog " + name + " reads mor tables; it does not " + what);
  }
}
