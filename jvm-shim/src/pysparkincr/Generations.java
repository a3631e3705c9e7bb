package pysparkincr;

import java.lang.reflect.Method;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Publishing a new generation of a Parquet table: the files are written elsewhere first, then the
 * catalog is pointed at them in one call, so readers see the old version or the new one, never a
 * mix, and a crash before the call leaves the old version untouched.
 *
 * <p>Partitions the new generation adds are first created pointing at an empty directory (invisible
 * to readers: no rows), so the one {@code alterPartitions} call switches every touched partition at
 * once. That call is a single metastore transaction in the Hive catalog.
 */
public final class Generations {
  private Generations() {}

  /**
   * Point each partition of {@code specs} at the matching location, in one catalog call.
   *
   * @return the locations the partitions had before (null for partitions created here), in the
   *     order of {@code specs}, so the caller can delete superseded generations.
   */
  public static List<String> publishPartitions(
      SparkSession session,
      String db,
      String table,
      List<Map<String, String>> specs,
      List<String> locations,
      String emptyLocation)
      throws Exception {
    SessionCatalog catalog = session.sessionState().catalog();
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> existing = new HashMap<>();
    for (CatalogTablePartition p :
        CollectionConverters.asJava(catalog.listPartitions(ident, Option.empty()))) {
      existing.put(p.spec(), p);
    }
    List<String> before = new ArrayList<>();
    List<CatalogTablePartition> missing = new ArrayList<>();
    for (Map<String, String> spec : specs) {
      CatalogTablePartition found = existing.get(scalaMap(spec));
      if (found != null) {
        Option<URI> uri = found.storage().locationUri();
        before.add(uri.isDefined() ? new org.apache.hadoop.fs.Path(uri.get()).toString() : null);
      } else {
        before.add(null);
        missing.add(partition(spec, storageAt(catalog.getTableMetadata(ident), emptyLocation)));
      }
    }
    if (!missing.isEmpty()) {
      catalog.createPartitions(ident, seq(missing), true);
      // One listing, not one metastore round trip per partition (365 of them took ~50 s on Derby).
      existing.clear();
      for (CatalogTablePartition p :
          CollectionConverters.asJava(catalog.listPartitions(ident, Option.empty()))) {
        existing.put(p.spec(), p);
      }
    }
    List<CatalogTablePartition> moved = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      CatalogTablePartition current = existing.get(scalaMap(specs.get(i)));
      if (current == null) current = catalog.getPartition(ident, scalaMap(specs.get(i)));
      moved.add(
          (CatalogTablePartition)
              copyWith(current, 1, withLocation(current.storage(), locations.get(i))));
    }
    catalog.alterPartitions(ident, seq(moved));
    return before;
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
    return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(specs);
  }

  /**
   * Names of the tables and views of schema {@code db}, one per line (temporary views left out);
   * null when the schema does not exist.
   */
  public static String tableNames(SparkSession session, String db) {
    SessionCatalog catalog = session.sessionState().catalog();
    if (!catalog.databaseExists(db)) return null;
    StringBuilder out = new StringBuilder();
    for (TableIdentifier ident : CollectionConverters.asJava(catalog.listTables(db))) {
      if (ident.database().isDefined()) out.append(ident.table()).append('\n');
    }
    return out.toString();
  }

  /** Remove partitions from the catalog, keeping their files (the caller deletes what it owns). */
  public static void forgetPartitions(
      SparkSession session, String db, String table, List<Map<String, String>> specs)
      throws Exception {
    if (specs.isEmpty()) return;
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    List<scala.collection.immutable.Map<String, String>> scalaSpecs = new ArrayList<>();
    for (Map<String, String> spec : specs) scalaSpecs.add(scalaMap(spec));
    session.sessionState().catalog().dropPartitions(ident, seq(scalaSpecs), true, false, true);
  }

  private static CatalogTablePartition partition(Map<String, String> spec, CatalogStorageFormat storage) {
    return new CatalogTablePartition(
        scalaMap(spec), storage, scalaMap(Map.of()), System.currentTimeMillis(), -1L, Option.empty());
  }

  private static CatalogStorageFormat storageAt(CatalogTable table, String location) {
    return withLocation(table.storage(), location);
  }

  private static CatalogStorageFormat withLocation(CatalogStorageFormat storage, String location) {
    // Hadoop's Path escapes what a URI may not hold (partition directories contain spaces and '%').
    URI uri = new org.apache.hadoop.fs.Path(location).toUri();
    return (CatalogStorageFormat) copyWith(storage, 0, Option.apply(uri));
  }

  /**
   * {@code record.copy(...)} with argument {@code index} replaced: a case class copy through its
   * default arguments, so the shim compiles against every Spark 4.x whatever fields they added.
   */
  private static Object copyWith(Object record, int index, Object value) {
    try {
      Method copy = null;
      for (Method m : record.getClass().getMethods()) {
        if (m.getName().equals("copy")) copy = m;
      }
      Object[] args = new Object[copy.getParameterCount()];
      for (int i = 0; i < args.length; i++) {
        args[i] = i == index ? value : record.getClass().getMethod("copy$default$" + (i + 1)).invoke(record);
      }
      return copy.invoke(record, args);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot copy " + record.getClass().getName() + ": " + e, e);
    }
  }

  private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }

  private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
    return scala.collection.immutable.Map.from(CollectionConverters.asScala(map));
  }
}
