package pysparkincr;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Observation;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
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
   * Write {@code df} as {@code format} files into {@code path}, which must not exist, partitioned by
   * {@code partitionColumnsJson} (a JSON list); the partition specs written, as {@link
   * Generations#writtenPartitions} reads them back ({@code []} for an unpartitioned write).
   */
  public static String save(SparkSession session, Dataset<Row> df, String format, String path,
      String partitionColumnsJson) throws java.io.IOException {
    String[] columns = Registry.JSON.readValue(partitionColumnsJson, String[].class);
    DataFrameWriter<Row> writer = df.write().format(format).mode("errorifexists");
    if (columns.length > 0) writer = writer.partitionBy(columns);
    writer.save(path);
    return columns.length > 0 ? Generations.writtenPartitions(session, path, partitionColumnsJson) : "[]";
  }
}
