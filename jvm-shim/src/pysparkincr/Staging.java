package pysparkincr;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Observation;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.functions;

/**
 * A build's write, in one py4j call per step: its rows counted as the write consumes them, and the
 * new generation written.
 *
 * <p>Why Java: through py4j, observing a count takes fourteen round trips (an Observation, a column
 * built call by call, a sequence of them) and reading it four; a DataFrameWriter takes one per
 * option. Counting, staging and reading the count took 39 round trips, now four
 * ({@code tests/test_generations.py}); a daily run of one model 112, now 87.
 */
public final class Staging {
  private Staging() {}

  /** A DataFrame counting its rows as an action consumes it, and the count once that action is done. */
  public static final class Counted {
    private final Dataset<Row> dataset;
    private final Observation observation;

    Counted(Dataset<Row> dataset, Observation observation) {
      this.dataset = dataset;
      this.observation = observation;
    }

    public Dataset<Row> dataset() {
      return dataset;
    }

    /** The rows counted; waits for the action that consumed {@link #dataset} (0 when it saw none). */
    public long rows() throws InterruptedException {
      Object found = observation.getAsJava().get("rows");
      return found == null ? 0L : ((Number) found).longValue();
    }
  }

  /** {@code df} counting its rows, or with {@code column} (not null) the rows where that column is not NULL. */
  public static Counted counted(Dataset<Row> df, String column, String name) {
    Observation observation = new Observation(name);
    Column counted = functions.count(column == null ? functions.lit(1) : functions.col(column)).as("rows");
    return new Counted(df.observe(observation, counted), observation);
  }

  /**
   * Write {@code df} as {@code format} files into {@code path} with save mode {@code mode} (a new
   * generation: {@code errorifexists}; rows added to one: {@code append}), partitioned by {@code
   * partitionColumnsJson} (a JSON list); the partition specs {@code path} then holds, as {@link
   * #writtenPartitions} reads them back ({@code []} for an unpartitioned write).
   */
  public static String save(SparkSession session, Dataset<Row> df, String format, String mode, String path,
      String partitionColumnsJson) throws IOException {
    String[] columns = Registry.JSON.readValue(partitionColumnsJson, String[].class);
    // No _SUCCESS marker: a generation is published by the catalog, never by a marker nobody reads, and
    // the marker is a file create per write (two processes forked on a local filesystem without Hadoop's
    // native library, a PUT on an object store): 16 ms of a one-row write's 123 here.
    DataFrameWriter<Row> writer = df.write().format(format).mode(mode)
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false");
    if (columns.length > 0) writer = writer.partitionBy(columns);
    writer.save(path);
    return columns.length > 0 ? writtenPartitions(session, path, columns) : "[]";
  }

  /**
   * The partition specs a staged write produced, read from its directory names: a JSON list of
   * column-to-value objects, values unescaped as the catalog spells them.
   */
  private static String writtenPartitions(SparkSession session, String path, String[] columns)
      throws IOException {
    FileSystem fs = new Path(path).getFileSystem(session.sessionState().newHadoopConf());
    List<Map<String, String>> specs = new ArrayList<>();
    specs.add(new java.util.LinkedHashMap<>());
    List<Path> levels = new ArrayList<>();
    levels.add(new Path(path));
    for (String column : columns) {
      List<Map<String, String>> nextSpecs = new ArrayList<>();
      List<Path> nextLevels = new ArrayList<>();
      for (int i = 0; i < specs.size(); i++) {
        for (FileStatus status : fs.listStatus(levels.get(i))) {
          String name = status.getPath().getName();
          int eq = name.indexOf('=');
          if (!status.isDirectory() || eq < 0 || !name.substring(0, eq).equalsIgnoreCase(column)) continue;
          Map<String, String> spec = new java.util.LinkedHashMap<>(specs.get(i));
          spec.put(column, ExternalCatalogUtils.unescapePathName(name.substring(eq + 1)));
          nextSpecs.add(spec);
          nextLevels.add(status.getPath());
        }
      }
      specs = nextSpecs;
      levels = nextLevels;
    }
    return Registry.JSON.writeValueAsString(specs);
  }
}

