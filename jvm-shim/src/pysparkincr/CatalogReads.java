package pysparkincr;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the catalog says of a table (its location, format, partitions; a schema's tables), each
 * answer in one call and as plain text or JSON.
 *
 * <p>Why Java: the same questions asked from Python walk Spark's catalog objects through py4j, a
 * round trip per object (per partition, for a listing), and SQL ({@code SHOW PARTITIONS}, {@code
 * SHOW TABLES}) costs a parsed and executed command each; these are asked on every call's hot path.
 */
public final class CatalogReads {
  private static final ObjectMapper JSON = new ObjectMapper();

  private CatalogReads() {}

  /** The table's location, as the catalog records it. */
  public static String location(SparkSession session, String db, String table) throws Exception {
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    return session.sessionState().catalog().getTableMetadata(ident).location().toString();
  }

  /**
   * The columns, schema, provider and directory of each of the named tables of schema {@code db}
   * that exists, as a JSON object keyed by table name: {@code {"columns": [...], "schema": "<Spark
   * schema JSON>", "provider": "<lowercased, or null>", "location": "<as recorded>", "root":
   * "<the location as a Hadoop path>"}}. A table that does not exist is left out, and so is every
   * table when the schema does not exist. One metastore query for all of them, where asking each
   * table from Python costs a dozen round trips and two metastore queries: a cold application pays
   * that once per state table, a build once per model (its format, schema and directory).
   */
  public static String describe(SparkSession session, String db, String names) throws Exception {
    List<TableIdentifier> idents = new ArrayList<>();
    for (String name : names.split("\n")) {
      if (!name.isEmpty()) idents.add(TableIdentifier.apply(name, Option.apply(db)));
    }
    Map<String, Map<String, Object>> found = new LinkedHashMap<>();
    List<CatalogTable> tables;
    try {
      tables = CollectionConverters.asJava(
          session.sessionState().catalog().getTablesByName(CollectionConverters.asScala(idents).toList()));
    } catch (NoSuchNamespaceException missingSchema) {
      return JSON.writeValueAsString(found);
    }
    for (CatalogTable table : tables) {
      Map<String, Object> described = new LinkedHashMap<>();
      described.put("columns", List.of(table.schema().fieldNames()));
      described.put("schema", readSchema(session, table).json());
      described.put("provider",
          table.provider().isDefined() ? table.provider().get().toLowerCase(java.util.Locale.ROOT) : null);
      described.put("location", table.location().toString());
      described.put("root", new Path(table.location()).toString());
      found.put(table.identifier().table(), described);
    }
    return JSON.writeValueAsString(found);
  }

  /**
   * The schema a read of {@code table} shows: CHAR and VARCHAR columns read as STRING (their
   * length kept in the field's metadata), unless the session preserves them.
   */
  private static StructType readSchema(SparkSession session, CatalogTable table) {
    if (Boolean.parseBoolean(session.conf().get("spark.sql.preserveCharVarcharTypeInfo", "false"))) {
      return table.schema();
    }
    return CharVarcharUtils.replaceCharVarcharWithStringInSchema(table.schema());
  }

  /** The table's provider (its format) lowercased; null when the catalog records none or the table does not exist. */
  public static String provider(SparkSession session, String db, String table) throws Exception {
    SessionCatalog catalog = session.sessionState().catalog();
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    if (!catalog.tableExists(ident)) return null;
    Option<String> provider = catalog.getTableMetadata(ident).provider();
    return provider.isDefined() ? provider.get().toLowerCase(java.util.Locale.ROOT) : null;
  }

  /**
   * Every location the table reads from, one per line: the table's own first, then each partition's
   * (one catalog call, where a listing through py4j costs a round trip per partition).
   */
  public static String locations(SparkSession session, String db, String table) throws Exception {
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    SessionCatalog catalog = session.sessionState().catalog();
    CatalogTable meta = catalog.getTableMetadata(ident);
    StringBuilder out = new StringBuilder(meta.location().toString());
    if (meta.partitionColumnNames().nonEmpty()) {
      for (CatalogTablePartition p : CollectionConverters.asJava(catalog.listPartitions(ident, Option.empty()))) {
        out.append('\n').append(p.location().toString());
      }
    }
    return out.toString();
  }

  /**
   * The table's partition specs as a JSON list of objects (column to value, as the catalog keeps
   * them): one catalog call, where SHOW PARTITIONS costs a parsed and executed command.
   */
  public static String partitionSpecs(SparkSession session, String db, String table) throws Exception {
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    List<Map<String, String>> specs = new ArrayList<>();
    for (CatalogTablePartition p :
        CollectionConverters.asJava(session.sessionState().catalog().listPartitions(ident, Option.empty()))) {
      specs.add(CollectionConverters.asJava(p.spec()));
    }
    return JSON.writeValueAsString(specs);
  }

  /**
   * Whether schema {@code db} exists in the session's current catalog, where {@code CREATE DATABASE}
   * would create it (false when that catalog keeps no namespaces: the statement then decides). Asked
   * before a model's schema is created: {@code CREATE DATABASE IF NOT EXISTS} costs the embedded Derby
   * metastore 40-60 ms when the schema is there (a create attempted, then refused), this ~4 ms.
   */
  public static boolean schemaExists(SparkSession session, String db) {
    CatalogPlugin current = session.sessionState().catalogManager().currentCatalog();
    return current instanceof SupportsNamespaces
        && ((SupportsNamespaces) current).namespaceExists(new String[] {db});
  }

  /**
   * Names of the tables and views of schema {@code db}, one per line (temporary views left out);
   * empty when the schema does not exist. Asks the metastore client directly where there is one:
   * the session catalog's listing matches a pattern and checks the schema first (three metastore
   * queries), the external catalog's checks the schema first (two); a schema that does not exist
   * simply has no tables.
   */
  public static String tableNames(SparkSession session, String db) throws Exception {
    StringBuilder out = new StringBuilder();
    for (String name : listed(session, db)) out.append(name).append('\n');
    return out.toString();
  }

  /**
   * {@link #tableNames} of each of the schemas {@code dbs} (one per line) in one call, as lines of
   * {@code schema<TAB>table}: a plan asks for the physical schema and the views' schemas together,
   * where a round trip each costs more than the listing after a second of idle (its metastore
   * query runs while the first one's code is still warm).
   */
  public static String tableNamesIn(SparkSession session, String dbs) throws Exception {
    StringBuilder out = new StringBuilder();
    for (String db : dbs.split("\n")) {
      if (db.isEmpty()) continue;
      for (String name : listed(session, db)) out.append(db).append('\t').append(name).append('\n');
    }
    return out.toString();
  }

  /**
   * The schema's table names; none when it does not exist (Hive's client lists none, another catalog
   * refuses with an AnalysisException). Any other failure is raised: a metastore that did not answer
   * must not read as a schema whose tables are all gone (a plan would rebuild every one of them).
   */
  private static List<String> listed(SparkSession session, String db) throws Exception {
    String schema = db.toLowerCase(java.util.Locale.ROOT);
    ExternalCatalog catalog = session.sharedState().externalCatalog().unwrapped();
    try {
      return CollectionConverters.asJava(catalog instanceof HiveExternalCatalog
          ? ((HiveExternalCatalog) catalog).client().listTables(schema) : catalog.listTables(schema));
    } catch (Exception e) {
      if (e instanceof org.apache.spark.sql.AnalysisException) return List.of(); // no such schema
      throw e;
    }
  }
}
