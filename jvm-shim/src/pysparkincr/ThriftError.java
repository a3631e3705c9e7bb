package pysparkincr;

import org.apache.hive.service.cli.HiveSQLException;

/**
 * An {@link IncrException} as the Thrift server passes it to beeline and other JDBC clients.
 *
 * <p>Why Java: the Thrift server sends a JDBC client its error with every stack frame (Hive's
 * {@code StringUtils.stringifyException}) unless the statement failed with a {@code HiveSQLException},
 * which it sends as it is; so a refusal is raised as one there, and a beeline user reads
 * {@code Error: [INCR_UNKNOWN_MODEL] ... SQLSTATE: 42P01 (state=42P01,code=0)}.
 *
 * <p>Loaded only inside the Thrift server ({@link IncrProcedure}), whose jar holds {@code HiveSQLException}.
 */
final class ThriftError extends HiveSQLException {
  private final boolean traced;

  ThriftError(IncrException error) {
    super(error.getMessage(), error.getSqlState(), 0, error.getStackTrace().length > 0 ? error : null);
    this.traced = getCause() != null;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }

  @Override
  public void setStackTrace(StackTraceElement[] stackTrace) {
    if (traced) super.setStackTrace(stackTrace);
  }

  /** The message alone: the client prefixes {@code Error: } and appends the SQLSTATE. */
  @Override
  public String toString() {
    return getMessage();
  }
}
