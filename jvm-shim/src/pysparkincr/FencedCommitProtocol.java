package pysparkincr;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;

/**
 * Spark's default commit protocol, whose job commit first checks the claim the write is made under.
 *
 * <p>An INSERT computes and commits in one Spark job, so a claim checked before it starts may be
 * taken over while it runs (its driver stopped past the lease). pyspark-incr sets the local
 * property {@link #CLAIM} (the claim's generation directory, a newline, its owner) on the thread
 * running the INSERT; the driver-side {@code commitJob} then writes the claim's next marker,
 * {@code commit}, exclusively, exactly as the Python side does (state/claims.py): when the newest
 * marker is a {@code fence} (or {@code release}) the claim is lost, the job fails before a single
 * file is moved, and Spark aborts it. Without the property (any other write) it is Spark's own.
 *
 * <p>Why Java: Spark instantiates the commit protocol by JVM class name and runs its job commit in
 * the driver's JVM after the tasks finish; Python has no hook between the tasks and the files
 * moving.
 */
public class FencedCommitProtocol extends SQLHadoopMapReduceCommitProtocol {
  /** Local property naming the claim an INSERT commits under. */
  public static final String CLAIM = "pyspark_incr.claim";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long serialVersionUID = 1L;

  /** Read on the driver, in the thread that runs the INSERT, when Spark instantiates the protocol. */
  private final String claim;
  private final String jobId;
  private final String path;
  private final boolean dynamicPartitionOverwrite;

  public FencedCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
    this.jobId = jobId;
    this.path = path;
    this.dynamicPartitionOverwrite = dynamicPartitionOverwrite;
    scala.Option<SparkSession> session = SparkSession.getActiveSession();
    if (session.isEmpty()) session = SparkSession.getDefaultSession();
    this.claim = session.isDefined() ? session.get().sparkContext().getLocalProperty(CLAIM) : null;
  }

  @Override
  public void commitJob(JobContext job, scala.collection.immutable.Seq<FileCommitProtocol.TaskCommitMessage> commits) {
    if (claim != null) {
      try {
        markCommit(job.getConfiguration(), claim);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
    super.commitJob(job, commits);
  }

  /**
   * Tasks get Spark's own protocol: the check is the driver's alone, so executors (other JVMs on a
   * cluster) need not have this class.
   */
  protected Object writeReplace() {
    return new SQLHadoopMapReduceCommitProtocol(jobId, path, dynamicPartitionOverwrite);
  }

  /** Write the claim's next marker, {@code commit}; IOException when the claim was fenced or released. */
  static void markCommit(Configuration conf, String claim) throws IOException {
    String[] parts = claim.split("\n", 2);
    String dir = parts[0];
    String owner = parts.length > 1 ? parts[1] : "";
    Path gen = new Path(dir);
    FileSystem fs = gen.getFileSystem(conf);
    for (int attempt = 0; attempt < 100; attempt++) {
      int newest = 0;
      for (FileStatus status : fs.listStatus(gen)) {
        String name = status.getPath().getName();
        if (name.matches("m\\d{8}")) newest = Math.max(newest, Integer.parseInt(name.substring(1)));
      }
      String op = newest == 0 ? null : op(fs, new Path(gen, marker(newest)));
      if ("fence".equals(op) || "release".equals(op)) {
        throw new IOException("Cannot commit: the claim " + dir + " of " + owner + " was taken over by another "
            + "application (this call's lease ran out); nothing of this write was committed");
      }
      String body = JSON.writeValueAsString(Map.of(
          "op", "commit", "by", owner, "at_ms", System.currentTimeMillis(), "detail", "job commit"));
      if (StateFiles.createExclusive(conf, dir, marker(newest + 1), body.getBytes(StandardCharsets.UTF_8), false)) {
        return;
      }
      // the holder's renewal or a taker's fence took that number: look again
    }
    throw new IOException("Cannot commit: the claim " + dir + " kept changing under this write");
  }

  private static String op(FileSystem fs, Path marker) throws IOException {
    for (int read = 0; read < 50; read++) {
      try (InputStream in = fs.open(marker)) {
        byte[] bytes = in.readAllBytes();
        if (bytes.length > 0) return String.valueOf(JSON.readTree(bytes).path("op").asText());
      }
      try {
        Thread.sleep(10);  // created, its content not written yet
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return "fence";  // unreadable: assume the worst, commit nothing
  }

  private static String marker(int n) {
    return String.format("m%08d", n);
  }
}
