package pysparkincr;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BinaryOperator;
import org.apache.spark.SparkConf;
import org.apache.spark.api.python.Py4JServer;
import org.apache.spark.sql.SparkSession;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Where the Python handler lives.
 *
 * <p>PySpark registers an in-process handler ({@link #register}). SQL-only clients (spark-sql,
 * Thrift server, Spark Connect) have no Python, so on first use we start a py4j server and a
 * {@code python -m pyspark_incr.bridge.worker} that attaches to this JVM and registers itself
 * ({@link #registerWorker}). The worker reads a stdin pipe we never close, so it exits when this
 * JVM dies however it dies; a shutdown hook also destroys it. A dead worker is restarted on the
 * next call. In those clients the worker is started as soon as the JVM's session exists
 * ({@link #startEarly}), so the Python start overlaps the metastore client's and the first CALL
 * finds it attached.
 *
 * <p>Why Java: Spark calls a procedure in the JVM, and SQL-only clients have no Python process at
 * all: the JVM side must hold the handler, and start and watch the worker when there is none.
 */
public final class Bridge {
  public static final String PYTHON_CONF = "spark.incr.python";
  public static final String TIMEOUT_CONF = "spark.incr.worker.startTimeout";
  private static final String TIMEOUT = "120";
  private static final int TAIL_LINES = 40;
  /** Settings of ours: sent to Python with every call ({@link #context}). */
  private static final String SETTINGS_PREFIX = "spark.incr.";

  private static final Object LOCK = new Object();
  private static volatile Handler handler;
  private static volatile boolean inProcess;
  private static volatile Process worker;
  /** Guarded by LOCK: a thread is starting the worker; another that needs one waits for that start. */
  private static boolean starting;
  /**
   * Guarded by LOCK: why the last start failed when it timed out, else null. A thread that waited for that
   * start fails with it rather than waiting a whole timeout again for a Python that hangs.
   */
  private static String timedOut;
  private static final AtomicBoolean earlyStart = new AtomicBoolean();
  private static Handler registryOf;
  private static Registry registry;
  private static Py4JServer server;
  private static final Deque<String> tail = new ArrayDeque<>();

  private Bridge() {}

  /** An in-process (PySpark) handler; replaces any worker. */
  public static void register(Handler h) {
    NoDelay.install(h);
    synchronized (LOCK) {
      handler = h;
      inProcess = true;
      stopWorker();
      LOCK.notifyAll();
    }
  }

  /** Called by the worker we launched once it is attached. */
  public static void registerWorker(Handler h) {
    NoDelay.install(h);
    synchronized (LOCK) {
      if (!inProcess) handler = h;
      LOCK.notifyAll();
    }
  }

  /** True once a PySpark driver registered its own handler (then no worker is ever started). */
  public static boolean hasInProcessHandler() {
    return inProcess && handler != null;
  }

  /** The live handler, starting (or restarting) the worker when there is none. */
  public static Handler get() {
    Handler h = handler;
    if (h != null && (inProcess || isAlive(worker))) return h;
    synchronized (LOCK) {
      boolean waited = awaitStart();
      if (handler != null && (inProcess || isAlive(worker))) return handler;
      handler = null;
      if (waitedForTimeout(waited)) throw failed(timedOut, null);
      SparkSession session = SparkSession.active();
      return startWorker(session.conf()::get, session.sparkContext().getConf());
    }
  }

  /**
   * Starts the worker in the background once this JVM's default session exists, when {@link EagerWorker}
   * says so; at most once per JVM. Called as the extensions are applied, before the session state and the
   * metastore client are built. A start that fails is left to the first CALL, which starts it again and
   * raises what went wrong: a session never fails for the worker.
   */
  static void startEarly() {
    if (!earlyStart.compareAndSet(false, true)) return;
    if (!EagerWorker.wanted(System.getProperty("sun.java.command"), System.getProperty(EagerWorker.CONF))) return;
    Thread t = new Thread(Bridge::startWhenSessionExists, "pyspark-incr-worker-early-start");
    t.setDaemon(true);
    t.start();
  }

  private static void startWhenSessionExists() {
    try {
      long deadline = System.currentTimeMillis() + 1000L * timeoutSeconds(System.getProperty(TIMEOUT_CONF, TIMEOUT));
      scala.Option<org.apache.spark.sql.classic.SparkSession> found =
          org.apache.spark.sql.classic.SparkSession.getDefaultSession();
      while (found.isEmpty() && System.currentTimeMillis() < deadline) {
        Thread.sleep(20);
        found = org.apache.spark.sql.classic.SparkSession.getDefaultSession();
      }
      if (found.isEmpty()) return;
      SparkConf conf = found.get().sparkContext().getConf();
      synchronized (LOCK) {
        boolean waited = awaitStart();
        // a CALL's start under way that timed out: that CALL failed with it, a second Python would hang too
        if (handler != null || waitedForTimeout(waited)) return;
        startWorker(conf::get, conf); // launch settings: the session's own are not built yet
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      System.err.println("pyspark-incr: the Python worker did not start with the session (the first CALL starts "
          + "it again): " + e.getMessage());
    }
  }

  /** Waits (holding LOCK on return) while another thread is starting the worker; true when it waited. */
  private static boolean awaitStart() {
    boolean waited = starting;
    try {
      while (starting) LOCK.wait(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failed("interrupted while waiting for the Python worker to start", e);
    }
    return waited;
  }

  /**
   * Called holding LOCK with no worker: whether the start the caller {@code waited} for timed out, so it must
   * not start another ({@link #timedOut} says why). A start that failed at once (a python that exits) is made
   * again, so the caller sees what went wrong.
   */
  private static boolean waitedForTimeout(boolean waited) {
    return waited && timedOut != null;
  }

  /**
   * The worker could not serve: Spark's own error form (INCR_BRIDGE_FAILED), which Spark passes through
   * where it wraps any other exception from loading a procedure into an opaque FAILED_TO_LOAD_ROUTINE.
   */
  private static IncrException failed(String text, Throwable cause) {
    IncrException e = new IncrException("INCR_BRIDGE_FAILED", "58000", text, null);
    if (cause != null) e.initCause(cause);
    return e;
  }

  private static long timeoutSeconds(String value) {
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw failed("cannot start the Python worker: " + TIMEOUT_CONF + "=" + value
          + " is not a whole number of seconds; set it to one (default " + TIMEOUT + ")", e);
    }
  }

  /** The registry of the current handler, fetched once per handler instance. */
  static Registry registry() {
    Handler h = get();
    synchronized (LOCK) {
      if (registryOf == h) return registry;
    }
    Registry r = new Registry(h.registry());
    synchronized (LOCK) {
      registryOf = h;
      registry = r;
    }
    return r;
  }

  static String call(String procedure, String argsJson, SparkSession session) {
    Handler h = get();
    try {
      String reply = h.call(procedure, argsJson, context(session), session);
      NoDelay.sweep(h); // a connection the call opened to Python (JDBC, Spark Connect) is swept once used
      return reply;
    } catch (RuntimeException e) {
      Process p = worker;
      if (!inProcess && p != null && exited(p)) {
        throw failed("the Python worker died during incr." + procedure
            + " (it is restarted on the next CALL; its last output below)\n" + tailText(), e);
      }
      throw e;
    }
  }

  /** The calling session's id and {@code spark.incr.*} settings, as JSON: sent with the call, not asked for. */
  static String context(SparkSession session) {
    Map<String, String> settings = new TreeMap<>();
    CollectionConverters.asJava(session.conf().getAll()).forEach((key, value) -> {
      if (key.startsWith(SETTINGS_PREFIX)) settings.put(key, value);
    });
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("session", session instanceof org.apache.spark.sql.classic.SparkSession
        ? ((org.apache.spark.sql.classic.SparkSession) session).sessionUUID() : null);
    context.put("settings", settings);
    try {
      return Registry.JSON.writeValueAsString(context);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("pyspark-incr: cannot encode the session's settings", e);
    }
  }

  /**
   * Called holding LOCK, no other start under way: launches the worker and waits for it to register.
   * {@code setting} looks up a setting with its default (the calling session's, or the launch settings).
   */
  private static Handler startWorker(BinaryOperator<String> setting, SparkConf conf) {
    String python = setting.apply(PYTHON_CONF, System.getenv().getOrDefault("PYSPARK_PYTHON", "python3"));
    long timeoutMs = 1000L * timeoutSeconds(setting.apply(TIMEOUT_CONF, TIMEOUT));
    starting = true;
    timedOut = null;
    try {
      return launch(python, timeoutMs, conf);
    } finally {
      starting = false;
      LOCK.notifyAll();
    }
  }

  private static Handler launch(String python, long timeoutMs, SparkConf conf) {
    if (server == null) {
      server = new Py4JServer(conf);
      server.start();
      Runtime.getRuntime().addShutdownHook(new Thread(Bridge::shutdown, "pyspark-incr-shutdown"));
    }
    ProcessBuilder pb = new ProcessBuilder(python, "-m", "pyspark_incr.bridge.worker");
    pb.environment().put("PYSPARK_GATEWAY_PORT", String.valueOf(server.getListeningPort()));
    pb.environment().put("PYSPARK_GATEWAY_SECRET", server.secret());
    pb.redirectErrorStream(true);
    synchronized (tail) {
      tail.clear();
    }
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw failed("cannot start the Python worker with '" + python + "' (" + e.getMessage() + "); set "
          + PYTHON_CONF + " to a python that has pyspark-incr installed", e);
    }
    worker = p;
    Thread pump = new Thread(() -> pump(p), "pyspark-incr-worker-output");
    pump.setDaemon(true);
    pump.start();
    long deadline = System.currentTimeMillis() + timeoutMs;
    try {
      while (handler == null && p.isAlive() && System.currentTimeMillis() < deadline) LOCK.wait(100);
      if (handler == null) {
        boolean hung = p.isAlive();
        String why = hung ? "did not register within " + timeoutMs / 1000 + " s (" + TIMEOUT_CONF + ")"
            : "exited with code " + p.exitValue();
        stopWorker();
        pump.join(2000);
        String text = "the Python worker (" + python + " -m pyspark_incr.bridge.worker) " + why + "; check that "
            + PYTHON_CONF + " is a python that has pyspark-incr installed (its last output below)\n" + tailText();
        if (hung) timedOut = text;
        throw failed(text, null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopWorker();
      throw failed("interrupted while starting the Python worker", e);
    }
    return handler;
  }

  /** Forwards worker output to our stderr (tracebacks belong in the server log) and keeps a tail. */
  private static void pump(Process p) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        System.err.println("[incr-worker] " + line);
        synchronized (tail) {
          if (tail.size() == TAIL_LINES) tail.removeFirst();
          tail.addLast(line);
        }
      }
    } catch (IOException ignored) {
      // the worker is gone; the tail has what it said
    }
  }

  private static String tailText() {
    synchronized (tail) {
      return tail.isEmpty() ? "(nothing)" : String.join("\n", tail);
    }
  }

  private static boolean isAlive(Process p) {
    return p != null && p.isAlive() && !zombie(p.pid());
  }

  /**
   * Whether the kernel shows the process exited though the JVM has not reaped it yet: until its reaper
   * thread runs (late, on a loaded machine), {@code isAlive} says true and a CALL went to the dead worker
   * instead of restarting it. Linux only ({@code /proc}); elsewhere the JVM's view decides.
   */
  private static boolean zombie(long pid) {
    try {
      String stat = new String(Files.readAllBytes(Paths.get("/proc", Long.toString(pid), "stat")),
          StandardCharsets.US_ASCII);
      char state = stat.charAt(stat.lastIndexOf(')') + 2);
      return state == 'Z' || state == 'X';
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static boolean exited(Process p) {
    try {
      return p.waitFor(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !p.isAlive();
    }
  }

  private static void stopWorker() {
    Process p = worker;
    worker = null;
    if (p == null) return;
    p.destroy();
    try {
      if (!p.waitFor(2, TimeUnit.SECONDS)) p.destroyForcibly();
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  private static void shutdown() {
    stopWorker();
    Py4JServer s = server;
    if (s != null) s.shutdown();
  }
}
