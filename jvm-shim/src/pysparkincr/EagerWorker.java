package pysparkincr;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether a JVM starts its Python worker with its session rather than at the first CALL
 * ({@code spark.incr.worker.eager}).
 *
 * <p>Started with the session, the worker's start (Python, pyspark, the procedures, the callback
 * server: 1-2 s) overlaps the metastore client's and the first CALL finds it attached. But it costs
 * a Python process and its CPU, which a job that never calls pyspark-incr should not pay when the
 * plugin is configured cluster-wide. So {@code auto} starts it early where a CALL is expected: the
 * Thrift and Connect servers, an interactive spark-sql, and a spark-sql whose {@code -e} text or
 * {@code -f} file calls {@code incr.*} or holds a MODEL statement. A wrong guess costs time only: a
 * JVM that did not start it early starts it at the first CALL.
 *
 * <p>Why Java: the decision is made as Spark applies the extensions, before any Python exists.
 */
public final class EagerWorker {
  static final String CONF = "spark.incr.worker.eager";
  private static final String CLI = "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver";
  private static final String[] SERVERS = {
    "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
    "org.apache.spark.sql.connect.service.SparkConnectServer",
  };
  /** A CALL of ours, or a MODEL statement (which becomes one): a false match only starts Python early. */
  private static final Pattern CALLS = Pattern.compile("(?i)\\bcall\\s+`?incr`?\\s*\\.|\\bmodel\\s*\\(");
  private static final Pattern SCRIPT_FILE = Pattern.compile("(?:^|\\s)-f\\s+(\\S+)");
  private static final Pattern INLINE_SQL = Pattern.compile("(?:^|\\s)-e\\s");
  /** The most of a {@code -f} file read for the guess. */
  private static final int MAX_SCRIPT_BYTES = 1 << 20;

  private EagerWorker() {}

  /**
   * {@code setting} true or false wins; else (auto, or a value that is neither, with a warning) the JVM's
   * command ({@code sun.java.command}: spark-submit names the main class and passes the program's
   * arguments) decides, as the class comment says. A PySpark driver registers its own handler: false.
   */
  public static boolean wanted(String command, String setting) {
    String value = setting == null ? "auto" : setting.trim().toLowerCase(Locale.ROOT);
    if (value.equals("true") || value.equals("false")) return value.equals("true");
    if (!value.equals("auto")) {
      System.err.println("pyspark-incr: " + CONF + "=" + setting + " is not auto, true or false; using auto");
    }
    if (command == null) return false;
    for (String server : SERVERS) {
      if (command.contains(server)) return true;
    }
    int cli = command.indexOf(CLI);
    if (cli < 0) return false;
    String args = command.substring(cli + CLI.length());
    boolean inline = INLINE_SQL.matcher(args).find();
    Matcher file = SCRIPT_FILE.matcher(args);
    boolean scripted = file.find();
    if (!inline && !scripted) return true; // interactive: a person about to type
    return inline && CALLS.matcher(args).find() || scripted && CALLS.matcher(script(file.group(1))).find();
  }

  /** The start of a {@code -f} script on the local file system, or "" (elsewhere, unreadable: no guess). */
  private static String script(String path) {
    try {
      Path p = Paths.get(path);
      if (!Files.isRegularFile(p)) return "";
      byte[] head = new byte[(int) Math.min(Files.size(p), MAX_SCRIPT_BYTES)];
      try (var in = Files.newInputStream(p)) {
        int n = in.readNBytes(head, 0, head.length);
        return new String(head, 0, n, StandardCharsets.UTF_8);
      }
    } catch (IOException | InvalidPathException | SecurityException e) {
      return "";
    }
  }
}
