package pysparkincr;

import java.util.List;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code incr} catalog: every procedure Python registered, under one flat namespace.
 *
 * <p>Holds no per-procedure code; signatures come from {@link Bridge#registry()}.
 *
 * <p>Why Java: Spark loads a catalog ({@code spark.sql.catalog.incr}) by JVM class name.
 */
public class IncrCatalog implements ProcedureCatalog {
  private String name = "incr";

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    if (namespace.length > 0) return new Identifier[0];
    List<String> names = Bridge.registry().names();
    Identifier[] out = new Identifier[names.size()];
    for (int i = 0; i < out.length; i++) out[i] = Identifier.of(new String[0], names.get(i));
    return out;
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    Registry registry = Bridge.registry();
    Registry.Spec spec = ident.namespace().length == 0 ? registry.get(ident.name()) : null;
    if (spec == null) {
      // Spark 4.2 has no NoSuchProcedureException; this is its ROUTINE_NOT_FOUND (42883), which
      // Spark passes through unwrapped (anything else becomes an opaque FAILED_TO_LOAD_ROUTINE).
      StringBuilder quoted = new StringBuilder(quote(name));
      for (String part : ident.namespace()) quoted.append('.').append(quote(part));
      quoted.append('.').append(quote(ident.name()));
      throw IncrCatalog.<RuntimeException>unchecked(new NoSuchFunctionException("ROUTINE_NOT_FOUND",
          new scala.collection.immutable.Map.Map1<>("routineName", quoted.toString())));
    }
    return IncrProcedure.of(spec);
  }

  /** AnalysisException (or a procedure's SQLException) is checked in Java's eyes; Spark's interfaces declare none. */
  @SuppressWarnings("unchecked")
  static <T extends Throwable> T unchecked(Throwable t) throws T {
    throw (T) t;
  }

  private static String quote(String part) {
    return "`" + part.replace("`", "``") + "`";
  }
}
