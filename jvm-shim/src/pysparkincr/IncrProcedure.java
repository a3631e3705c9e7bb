package pysparkincr;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * One registry entry as a Spark procedure: typed args out to Python, typed rows back.
 *
 * <p>Why Java: Spark resolves {@code CALL} to JVM procedure objects, with Spark's internal row
 * types.
 *
 * <p>Both halves of a procedure in one class: unbound, it declares every parameter; bound, only
 * those the call binds ({@link Binding}). Spark 4.2 calls such a procedure a {@code
 * SimpleProcedure}, and only for one does {@code DESCRIBE PROCEDURE} list the parameters; Spark 4.1,
 * which the jar is compiled against, has no such interface, so {@link #of} puts it on at runtime
 * where it exists.
 */
final class IncrProcedure implements UnboundProcedure, BoundProcedure {
  private static final Class<?> SIMPLE = simpleProcedureClass();
  private final Registry.Spec spec;
  private final Binding binding;

  private IncrProcedure(Registry.Spec spec, Binding binding) {
    this.spec = spec;
    this.binding = binding;
  }

  /** The procedure for {@code spec}: a {@code SimpleProcedure} where this Spark has the interface. */
  static UnboundProcedure of(Registry.Spec spec) {
    IncrProcedure procedure = new IncrProcedure(spec, Binding.all(spec));
    if (SIMPLE == null) return procedure;
    return (UnboundProcedure) Proxy.newProxyInstance(
        IncrProcedure.class.getClassLoader(), new Class<?>[] {SIMPLE}, (proxy, method, args) -> {
          try {
            return IncrProcedure.class.getMethod(method.getName(), method.getParameterTypes()).invoke(procedure, args);
          } catch (InvocationTargetException e) {
            throw e.getCause(); // the procedure's own error, exactly as a direct call throws it
          }
        });
  }

  /**
   * Scans whose reading raises {@code error}: Spark reads them outside this procedure, where a checked
   * exception may pass (out of {@link #call} the 4.2 proxy would wrap it in an UndeclaredThrowableException).
   */
  private static Iterator<Scan> failing(Throwable error) {
    return new Iterator<Scan>() {
      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public Scan next() {
        throw IncrCatalog.<RuntimeException>unchecked(error);
      }
    };
  }

  /** Whether this thread runs a statement of the Thrift server (its errors reach JDBC clients). */
  private static boolean servingJdbc() {
    return StackWalker.getInstance().walk(frames -> frames.anyMatch(
        f -> f.getClassName().startsWith("org.apache.spark.sql.hive.thriftserver.SparkExecuteStatementOperation")));
  }

  private static Class<?> simpleProcedureClass() {
    try {
      return Class.forName(
          "org.apache.spark.sql.connector.catalog.procedures.SimpleProcedure", false, UnboundProcedure.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      return null; // Spark 4.1
    }
  }

  @Override
  public String name() {
    return spec.name;
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return new IncrProcedure(spec, Binding.of(spec, inputType));
  }

  @Override
  public String description() {
    return spec.description;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return binding.parameters();
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    String reply = Bridge.call(spec.name, binding.argsJson(input), SparkSession.active());
    JsonNode result;
    try {
      result = Registry.JSON.readTree(reply);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("incr." + spec.name + ": unreadable reply from Python: " + reply, e);
    }
    JsonNode error = result.get("error");
    if (error != null && !error.isNull()) {
      // Exactly the Python message, with its error class: what spark-sql, JDBC and PySpark users read.
      IncrException refusal = new IncrException(error.path("condition").asText("INCR_INTERNAL_ERROR"),
          error.path("sqlstate").asText("XX000"), error.path("message").asText(),
          error.hasNonNull("trace") ? error.get("trace").asText() : null);
      if (servingJdbc()) return failing(new ThriftError(refusal));
      throw refusal;
    }
    if (spec.output.isEmpty()) return Collections.emptyIterator();
    final StructType schema = spec.outputSchema;
    final InternalRow[] rows = spec.rows(result.path("rows"));
    Scan scan = new LocalScan() {
      @Override
      public InternalRow[] rows() {
        return rows;
      }

      @Override
      public StructType readSchema() {
        return schema;
      }
    };
    return Collections.singletonList(scan).iterator();
  }
}
