package pysparkincr;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The procedure registry as declared by Python, plus the value conversions between Spark's
 * internal representation and the JSON that crosses py4j. Parsed once per handler instance.
 *
 * <p>Why Java: the arguments and result rows are Spark's internal values in the JVM; converting
 * them there costs no round trip per value.
 */
final class Registry {
  static final ObjectMapper JSON =
      JsonMapper.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();

  /** One declared parameter or output column. */
  static final class Field {
    final String name;
    final String type;
    final DataType dataType;
    final String defaultSql; // null: required (parameters only)
    final String description;

    Field(JsonNode n) {
      name = n.get("name").asText();
      type = n.get("type").asText();
      dataType = dataType(type);
      JsonNode d = n.get("default");
      defaultSql = d == null || d.isNull() ? null : d.asText();
      description = n.path("description").asText("");
    }
  }

  /** One procedure's signature. */
  static final class Spec {
    final String name;
    final String description;
    final List<Field> params = new ArrayList<>();
    final List<Field> output = new ArrayList<>();
    final ProcedureParameter[] parameters;
    /** The same parameters without their defaults: how a call that passes them binds them. */
    final ProcedureParameter[] passed;
    final StructType outputSchema;

    Spec(JsonNode n) {
      name = n.get("name").asText();
      description = n.path("description").asText("");
      for (JsonNode p : n.path("parameters")) params.add(new Field(p));
      for (JsonNode c : n.path("output")) output.add(new Field(c));
      parameters = buildParameters(true);
      passed = buildParameters(false);
      outputSchema = buildOutputSchema();
    }

    private ProcedureParameter[] buildParameters(boolean withDefaults) {
      ProcedureParameter[] out = new ProcedureParameter[params.size()];
      for (int i = 0; i < out.length; i++) {
        Field f = params.get(i);
        ProcedureParameter.Builder b = ProcedureParameter.in(f.name, f.dataType);
        if (withDefaults && f.defaultSql != null) b = b.defaultValue(f.defaultSql);
        out[i] = b.comment(f.description).build();
      }
      return out;
    }

    private StructType buildOutputSchema() {
      StructField[] fields = new StructField[output.size()];
      for (int i = 0; i < fields.length; i++) {
        Field f = output.get(i);
        fields[i] = new StructField(f.name, f.dataType, true, Metadata.empty()).withComment(f.description);
      }
      return new StructType(fields);
    }

    /** Values of the parameters at {@code indices} (one per {@code input} field) as a JSON object keyed by name. */
    String argsJson(int[] indices, InternalRow input) {
      ObjectNode args = JSON.createObjectNode();
      for (int i = 0; i < indices.length; i++) {
        Field f = params.get(indices[i]);
        if (input.isNullAt(i)) {
          args.putNull(f.name);
          continue;
        }
        switch (f.type) {
          case "string": args.put(f.name, input.getUTF8String(i).toString()); break;
          case "boolean": args.put(f.name, input.getBoolean(i)); break;
          case "int": args.put(f.name, input.getInt(i)); break;
          case "bigint": case "timestamp": args.put(f.name, input.getLong(i)); break;
          case "double": args.put(f.name, input.getDouble(i)); break;
          default: throw new IllegalStateException("unsupported parameter type " + f.type);
        }
      }
      return args.toString();
    }

    /** Python's result rows in Spark's internal representation, by declared output type. */
    InternalRow[] rows(JsonNode rows) {
      InternalRow[] out = new InternalRow[rows.size()];
      for (int r = 0; r < out.length; r++) {
        JsonNode row = rows.get(r);
        if (row.size() != output.size()) {
          throw new IllegalStateException(
              "incr." + name + " returned " + row.size() + " values for " + output.size() + " columns");
        }
        Object[] values = new Object[output.size()];
        for (int c = 0; c < values.length; c++) values[c] = internal(output.get(c).type, row.get(c));
        out[r] = new GenericInternalRow(values);
      }
      return out;
    }
  }

  private final Map<String, Spec> specs = new LinkedHashMap<>();

  Registry(String json) {
    try {
      for (JsonNode p : JSON.readTree(json).path("procedures")) {
        Spec s = new Spec(p);
        specs.put(s.name, s);
      }
    } catch (java.io.IOException e) {
      throw new IllegalStateException("pyspark-incr: unreadable procedure registry: " + e.getMessage(), e);
    }
  }

  Spec get(String name) { return specs.get(name); }

  List<String> names() { return Collections.unmodifiableList(new ArrayList<>(specs.keySet())); }

  static DataType dataType(String type) {
    switch (type) {
      case "string": return DataTypes.StringType;
      case "boolean": return DataTypes.BooleanType;
      case "int": return DataTypes.IntegerType;
      case "bigint": return DataTypes.LongType;
      case "double": return DataTypes.DoubleType;
      case "timestamp": return DataTypes.TimestampType;
      default: throw new IllegalStateException("pyspark-incr: unsupported type " + type);
    }
  }

  private static Object internal(String type, JsonNode v) {
    if (v == null || v.isNull()) return null;
    switch (type) {
      case "string": return UTF8String.fromString(v.isTextual() ? v.asText() : v.toString());
      case "boolean": return v.asBoolean();
      case "int": return v.asInt();
      case "bigint": case "timestamp": return v.asLong();
      case "double": return v.asDouble();
      default: throw new IllegalStateException("pyspark-incr: unsupported type " + type);
    }
  }
}
