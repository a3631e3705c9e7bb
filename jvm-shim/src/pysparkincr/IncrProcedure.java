package pysparkincr;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.SimpleProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * One registry entry as a Spark procedure: typed args out to Python, typed rows back.
 *
 * <p>Why Java: Spark resolves {@code CALL} to JVM procedure objects, with Spark's internal row
 * types.
 */
final class IncrProcedure implements SimpleProcedure {
  private final Registry.Spec spec;

  IncrProcedure(Registry.Spec spec) {
    this.spec = spec;
  }

  @Override
  public String name() {
    return spec.name;
  }

  @Override
  public String description() {
    return spec.description;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return spec.parameters.clone();
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    String reply = Bridge.call(spec.name, spec.argsJson(input), SparkSession.active());
    JsonNode result;
    try {
      result = Registry.JSON.readTree(reply);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("incr." + spec.name + ": unreadable reply from Python: " + reply, e);
    }
    JsonNode error = result.get("error");
    if (error != null && !error.isNull()) {
      // Exactly the Python message: this is what spark-sql, JDBC and PySpark users read.
      throw new IllegalArgumentException(error.path("message").asText());
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
