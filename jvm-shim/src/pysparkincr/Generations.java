package pysparkincr;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException;
import org.apache.spark.sql.catalyst.analysis.PartitionsAlreadyExistException;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Publishing a new generation of a Parquet table: the files are written elsewhere first, then the
 * catalog is pointed at them in one call, so readers see the old version or the new one, never a
 * mix, and a crash before the call leaves the old version untouched.
 *
 * <p>When the generation also replaces partitions, those it adds are first created pointing at an
 * empty directory (invisible to readers: no rows), so the one {@code alterPartitions} call switches
 * every touched partition at once. When it only adds partitions, one {@code createPartitions} adds
 * them at their place. Either call is a single metastore transaction in the Hive catalog.
 *
 * <p>Why Java: the one-transaction partition switch is the catalog's {@code alterPartitions}/{@code
 * createPartitions}, reachable only through Spark's JVM {@code ExternalCatalog} (no SQL or PySpark
 * equivalent); through py4j object by object it would cost a round trip per partition and per
 * listing.
 */
public final class Generations {
  private static final String GEN_PREFIX = "_incr_gen_";
  private static final String EMPTY_DIR = "_incr_empty";
  /** Up to this many new partitions are read back one by one; more, by one listing. */
  private static final int FEW = 16;
  private static final ObjectMapper JSON = new ObjectMapper();

  private Generations() {}

  /**
   * Make the staged generation at {@code stagedPath} what readers of a partitioned table see, in one
   * py4j call: its partitions are switched and {@code emptied} partitions lose their rows in one
   * {@code alterPartitions}, the emptied ones are then dropped from the catalog, the table is
   * refreshed, and the generations nothing points at any more are deleted.
   *
   * @param columnsJson the partition columns, in order (JSON list)
   * @param writtenJson the partitions the generation holds (JSON list of column-to-value objects)
   * @param emptiedJson partitions to empty; those the table does not have are ignored
   */
  public static void publish(
      SparkSession session,
      String db,
      String table,
      String stagedPath,
      String columnsJson,
      String writtenJson,
      String emptiedJson)
      throws Exception {
    List<String> columns = Arrays.asList(JSON.readValue(columnsJson, String[].class));
    SessionCatalog catalog = session.sessionState().catalog();
    TableIdentifier ident = TableIdentifier.apply(table, Option.apply(db));
    CatalogTable meta = catalog.getTableRawMetadata(ident); // as the Hive catalog hands it to its client
    List<Map<String, String>> written = specsOf(writtenJson, meta);
    List<Map<String, String>> candidates = specsOf(emptiedJson, meta);
    Path root = new Path(stagedPath).getParent();
    FileSystem fs = root.getFileSystem(session.sessionState().newHadoopConf());
    List<String> locations = new ArrayList<>();
    for (Map<String, String> spec : written) locations.add(stagedPath + "/" + partitionPath(spec, columns, meta));
    java.util.Set<scala.collection.immutable.Map<String, String>> touched = new java.util.HashSet<>();
    for (Map<String, String> spec : written) touched.add(scalaMap(spec));
    // The common case (a new day): every partition is new. Adding them at their place is one metastore
    // transaction, which refuses the lot when one exists; only then are they looked up (each lookup
    // costs as much as the transaction).
    if (!written.isEmpty() && candidates.stream().allMatch(c -> touched.contains(scalaMap(c)))
        && addedAll(session, catalog, ident, meta, written, locations)) {
      refreshed(session, catalog, ident, db, table);
      return;
    }
    java.util.LinkedHashSet<Map<String, String>> asked = new java.util.LinkedHashSet<>(written);
    asked.addAll(candidates);
    Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> existing =
        existing(catalog, ident, new ArrayList<>(asked), meta.partitionColumnNames().size());
    List<Map<String, String>> emptied = new ArrayList<>();
    for (Map<String, String> spec : candidates) {
      if (existing.containsKey(scalaMap(spec)) && touched.add(scalaMap(spec))) emptied.add(spec);
    }
    if (written.isEmpty() && emptied.isEmpty()) return;
    String empty = new Path(root, EMPTY_DIR).toString();
    fs.mkdirs(new Path(empty));
    List<Map<String, String>> specs = new ArrayList<>(written);
    specs.addAll(emptied);
    for (int i = 0; i < emptied.size(); i++) locations.add(empty);
    List<String> before = switchPartitions(catalog, ident, meta, existing, specs, locations, empty);
    if (!emptied.isEmpty()) {
      List<scala.collection.immutable.Map<String, String>> dropped = new ArrayList<>();
      for (Map<String, String> spec : emptied) dropped.add(scalaMap(spec));
      catalog.dropPartitions(ident, seq(dropped), true, false, true);
    }
    refreshed(session, catalog, ident, db, table);
    deleteSuperseded(fs, root, before, new Path(stagedPath));
  }

  /**
   * Create every partition of {@code specs} at its location, in one transaction; false when one exists.
   *
   * <p>On a Hive catalog the client is handed the table just read: the session catalog and the Hive
   * catalog would each first ask the metastore again whether the schema and the table exist and
   * what the table is (five queries, a third of a new day's publish on Derby), then make this same
   * call, with the partition columns lowercased as the metastore keeps them.
   */
  private static boolean addedAll(SparkSession session, SessionCatalog catalog, TableIdentifier ident,
      CatalogTable meta, List<Map<String, String>> specs, List<String> locations) throws Exception {
    ExternalCatalog external = session.sharedState().externalCatalog().unwrapped();
    boolean hive = external instanceof HiveExternalCatalog;
    List<CatalogTablePartition> added = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      added.add(partition(hive ? lowercased(specs.get(i)) : specs.get(i), storageAt(meta, locations.get(i))));
    }
    try {
      // a refusal is expected (the partitions exist: a restatement, a lookback) and handled below
      ExpectedRefusals.quietly(() -> {
        if (hive) {
          ((HiveExternalCatalog) external).client().createPartitions(meta, seq(added), false);
        } else {
          catalog.createPartitions(ident, seq(added), false);
        }
        return null;
      });
      return true;
    } catch (Exception e) {
      if (e instanceof PartitionsAlreadyExistException) return false;
      throw e;
    }
  }

  private static Map<String, String> lowercased(Map<String, String> spec) {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    for (Map.Entry<String, String> e : spec.entrySet()) out.put(e.getKey().toLowerCase(java.util.Locale.ROOT), e.getValue());
    return out;
  }

  /**
   * The partitions of {@code specs} the table has: looked up one by one when they are few (a whole
   * spec by its name; a partial one by a listing), else from one listing of the table.
   */
  private static Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> existing(
      SessionCatalog catalog, TableIdentifier ident, List<Map<String, String>> specs, int partitionColumns) {
    if (specs.size() > FEW) return listed(catalog, ident);
    Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> out = new HashMap<>();
    for (Map<String, String> spec : specs) {
      if (spec.size() == partitionColumns) {
        // The metastore finds a partition by its name through an index; a partial spec is a pattern it
        // matches against every partition of the table (~30 ms at a year of days on Derby).
        CatalogTablePartition found = partitionOrNull(catalog, ident, scalaMap(spec));
        if (found != null) out.put(key(found), found);
        continue;
      }
      for (CatalogTablePartition p :
          CollectionConverters.asJava(catalog.listPartitions(ident, Option.apply(scalaMap(spec))))) {
        out.put(key(p), p);
      }
    }
    return out;
  }

  private static CatalogTablePartition partitionOrNull(
      SessionCatalog catalog, TableIdentifier ident, scala.collection.immutable.Map<String, String> spec) {
    try {
      return catalog.getPartition(ident, spec);
    } catch (Exception e) {
      if (e instanceof NoSuchPartitionException) return null;
      throw e;
    }
  }

  /**
   * What {@code REFRESH TABLE} does after a publish, minus what a publish cannot make stale: the
   * cached relation is dropped, and the table re-cached when a user cached it. The shared file
   * listing cache stays, because a publish never changes the files of a directory already listed
   * (every partition moves to a new directory).
   */
  private static void refreshed(SparkSession session, SessionCatalog catalog, TableIdentifier ident, String db,
      String table) {
    catalog.invalidateCachedTable(ident);
    if (!session.sharedState().cacheManager().isEmpty()) {
      session.catalog().refreshTable(quoted(db) + "." + quoted(table));
    }
  }

  /**
   * Point each partition of {@code specs} at the matching location, in one catalog call; partitions
   * the table lacks are first created pointing at {@code emptyLocation}.
   *
   * @return the locations the partitions had before (partitions created here left out).
   */
  private static List<String> switchPartitions(
      SessionCatalog catalog,
      TableIdentifier ident,
      CatalogTable meta,
      Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> existing,
      List<Map<String, String>> specs,
      List<String> locations,
      String emptyLocation)
      throws Exception {
    List<String> before = new ArrayList<>();
    List<CatalogTablePartition> missing = new ArrayList<>();
    for (Map<String, String> spec : specs) {
      CatalogTablePartition found = existing.get(scalaMap(spec));
      if (found != null) {
        Option<URI> uri = found.storage().locationUri();
        if (uri.isDefined()) before.add(new Path(uri.get()).toString());
      } else {
        missing.add(partition(spec, storageAt(meta, emptyLocation)));
      }
    }
    if (!missing.isEmpty()) {
      catalog.createPartitions(ident, seq(missing), true);
      if (missing.size() <= FEW) {
        for (CatalogTablePartition p : missing) existing.put(p.spec(), catalog.getPartition(ident, p.spec()));
      } else {
        // One listing, not one metastore round trip per partition (365 of them took ~50 s on Derby).
        existing.clear();
        existing.putAll(listed(catalog, ident));
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
   * Delete what the table no longer points at, when it lies inside the table's root (ours to
   * delete): superseded partition directories, and generations left without files.
   */
  private static void deleteSuperseded(FileSystem fs, Path root, List<String> old, Path keep)
      throws IOException {
    String rootText = root.toString();
    String keepText = keep.toString();
    for (String location : new java.util.LinkedHashSet<>(old)) {
      String text = new Path(location).toString();
      if (!text.startsWith(rootText + "/") || text.startsWith(keepText) || text.endsWith(EMPTY_DIR)) continue;
      fs.delete(new Path(text), true);
      String first = text.substring(rootText.length() + 1).split("/")[0];
      if (first.startsWith(GEN_PREFIX)) {
        Path generation = new Path(root, first);
        if (fs.exists(generation) && !hasFiles(fs, generation)) fs.delete(generation, true);
      }
    }
  }

  private static boolean hasFiles(FileSystem fs, Path path) throws IOException {
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> files = fs.listFiles(path, true);
    while (files.hasNext()) {
      String name = files.next().getPath().getName();
      if (!name.startsWith("_") && !name.startsWith(".")) return true;
    }
    return false;
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
    URI uri = new Path(location).toUri();
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

  private static Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> listed(
      SessionCatalog catalog, TableIdentifier ident) {
    Map<scala.collection.immutable.Map<String, String>, CatalogTablePartition> out = new HashMap<>();
    for (CatalogTablePartition p : CollectionConverters.asJava(catalog.listPartitions(ident, Option.empty()))) {
      out.put(key(p), p);
    }
    return out;
  }

  /** A partition's spec as callers spell it: the catalog gives NULL for the default partition. */
  private static scala.collection.immutable.Map<String, String> key(CatalogTablePartition p) {
    Map<String, String> spec = new HashMap<>();
    for (Map.Entry<String, String> e : CollectionConverters.asJava(p.spec()).entrySet()) {
      spec.put(e.getKey(), e.getValue() == null ? ExternalCatalogUtils.DEFAULT_PARTITION_NAME() : e.getValue());
    }
    return scalaMap(spec);
  }

  /** Specs from JSON, each column named as the catalog names it (whatever case the caller used). */
  private static List<Map<String, String>> specsOf(String json, CatalogTable meta) throws IOException {
    List<Map<String, String>> specs = new ArrayList<>();
    for (Map<?, ?> spec : JSON.readValue(json, Map[].class)) {
      Map<String, String> out = new HashMap<>();
      for (Map.Entry<?, ?> e : spec.entrySet()) out.put(catalogName((String) e.getKey(), meta), (String) e.getValue());
      specs.add(out);
    }
    return specs;
  }

  private static String catalogName(String column, CatalogTable meta) {
    for (String name : CollectionConverters.asJava(meta.partitionColumnNames())) {
      if (name.equalsIgnoreCase(column)) return name;
    }
    return column;
  }

  private static String partitionPath(Map<String, String> spec, List<String> columns, CatalogTable meta) {
    StringBuilder out = new StringBuilder();
    for (String column : columns) {
      if (out.length() > 0) out.append('/');
      String name = catalogName(column, meta);
      out.append(ExternalCatalogUtils.escapePathName(column)).append('=')
          .append(ExternalCatalogUtils.escapePathName(spec.get(name)));
    }
    return out.toString();
  }

  private static String quoted(String name) {
    return "`" + name.replace("`", "``") + "`";
  }

  private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }

  private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
    return scala.collection.immutable.Map.from(CollectionConverters.asScala(map));
  }
}
