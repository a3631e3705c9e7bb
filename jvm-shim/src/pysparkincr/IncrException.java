package pysparkincr;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkThrowable;

/**
 * A refusal from pyspark-incr as Spark shows its own errors: {@code [CONDITION] message SQLSTATE: X}.
 *
 * <p>Why Java: Spark's clients (spark-sql, the Thrift server, Spark Connect, PySpark) recognise an
 * error class and SQLSTATE only on a JVM {@link SparkThrowable}.
 *
 * <p>An {@link IllegalArgumentException}, because PySpark converts only the Java classes it knows
 * and an argument error is what a refusal is; a user error carries no stack frames and prints no
 * trace, since the message already names the fault and the fix. Python sends a trace along for an
 * internal bug, or for any error when {@code spark.incr.errors.stackTrace} is on: then the Java frames
 * are kept and the Python trace follows the message.
 */
final class IncrException extends IllegalArgumentException implements SparkThrowable {
  private final String condition;
  private final String sqlState;
  private final String text;
  private final boolean traced;

  IncrException(String condition, String sqlState, String text, String trace) {
    super(format(condition, sqlState, text, trace));
    this.condition = condition;
    this.sqlState = sqlState;
    this.text = text;
    this.traced = trace != null && !trace.isEmpty();
    if (traced) super.setStackTrace(new Throwable().getStackTrace());
  }

  /** Spark's layout: the class, the first line, the SQLSTATE, then any further lines (context, trace). */
  private static String format(String condition, String sqlState, String text, String trace) {
    int newline = text.indexOf('\n');
    String first = newline < 0 ? text : text.substring(0, newline);
    String rest = newline < 0 ? "" : text.substring(newline);
    String tail = trace == null || trace.isEmpty() ? "" : "\n\n" + trace.stripTrailing();
    return "[" + condition + "] " + first + " SQLSTATE: " + sqlState + rest + tail;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this; // frames are added in the constructor only when a trace was asked for
  }

  /** Spark hands its caller's frames to a failed analysis; a user error keeps none (Spark Connect shows them). */
  @Override
  public void setStackTrace(StackTraceElement[] stackTrace) {
    if (traced) super.setStackTrace(stackTrace);
  }

  @Override
  public String getCondition() {
    return condition;
  }

  @Override
  @SuppressWarnings("deprecation")
  public String getErrorClass() {
    return condition;
  }

  @Override
  public String getSqlState() {
    return sqlState;
  }

  @Override
  public Map<String, String> getMessageParameters() {
    return Collections.singletonMap("message", text);
  }

  @Override
  public boolean isInternalError() {
    return "INCR_INTERNAL_ERROR".equals(condition);
  }

  /**
   * The message without its {@code [CONDITION]} prefix: the Thrift server shows
   * {@code [CONDITION] } followed by this, so the class appears once.
   */
  @Override
  public String toString() {
    return getMessage().substring(condition.length() + 3);
  }

  /** spark-sql prints the message, then the trace: a user error has nothing more to say. */
  @Override
  public void printStackTrace(PrintStream s) {
    if (traced) super.printStackTrace(s);
  }

  @Override
  public void printStackTrace(PrintWriter s) {
    if (traced) super.printStackTrace(s);
  }
}
