package pysparkincr;

import java.util.concurrent.Callable;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.filter.AbstractFilter;

/**
 * Metastore refusals a caller expects and handles, kept out of the application's log.
 *
 * <p>Hive's client logs every metastore exception at ERROR, stack trace included, before it
 * rethrows it. A publish first adds all its partitions in one transaction and, only when one
 * exists (a restatement, a lookback), looks them up and switches them instead: that refusal is
 * part of a correct run, and a scheduled job's log must not show it as an error. While {@link
 * #quietly} runs, the Hive client's events of the calling thread are dropped; other threads' are
 * not, and neither is anything outside it. A failure of another kind still reaches the caller as
 * an exception, which the call reports.
 *
 * <p>Without log4j 2 (another logging backend) the events stay as they are.
 *
 * <p>Why Java: a log4j filter runs in the JVM on every event of the logger; one calling into
 * Python would cost a round trip per log line, and the refusal happens inside {@link Generations}.
 */
final class ExpectedRefusals {
  /** The logger Hive's client logs metastore exceptions on. */
  static final String HIVE_CLIENT = "hive.ql.metadata.Hive"; // Hive 2.3 names its logger so, not after the class

  private static final ThreadLocal<Boolean> QUIET = ThreadLocal.withInitial(() -> false);
  /** The configuration the filter was put in: a reconfiguration (a new one) needs it again. */
  private static Configuration filtered;

  private ExpectedRefusals() {}

  /** {@code body}'s result, with the Hive client's log events of this thread dropped while it runs. */
  static <T> T quietly(Callable<T> body) throws Exception {
    install();
    QUIET.set(true);
    try {
      return body.call();
    } finally {
      QUIET.set(false);
    }
  }

  private static synchronized void install() {
    try {
      // asked on every publish: one context lookup (a walk of the caller's stack), not two
      org.apache.logging.log4j.spi.LoggerContext current = LogManager.getContext(false);
      if (!(current instanceof LoggerContext)) return;
      LoggerContext context = (LoggerContext) current;
      Configuration config = context.getConfiguration();
      if (config == filtered) return;
      LoggerConfig found = config.getLoggerConfig(HIVE_CLIENT);
      if (found.getName().equals(HIVE_CLIENT)) {
        found.addFilter(new DropQuiet());
      } else {
        // a level of null follows the parent's: spark.sparkContext.setLogLevel keeps working for it
        LoggerConfig own = new LoggerConfig(HIVE_CLIENT, null, true);
        own.addFilter(new DropQuiet());
        config.addLogger(HIVE_CLIENT, own);
      }
      context.updateLoggers();
      filtered = config;
    } catch (LinkageError noLog4jCore) {
      // another logging backend: its events stay as they are
    }
  }

  /** Drops the events of a thread inside {@link #quietly}. */
  private static final class DropQuiet extends AbstractFilter {
    DropQuiet() {
      super(Filter.Result.NEUTRAL, Filter.Result.NEUTRAL);
    }

    @Override
    public Filter.Result filter(LogEvent event) {
      return QUIET.get() ? Filter.Result.DENY : Filter.Result.NEUTRAL;
    }
  }
}
