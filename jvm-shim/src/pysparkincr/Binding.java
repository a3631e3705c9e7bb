package pysparkincr;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The parameters one {@code CALL} binds: those it passes, and the required ones.
 *
 * <p>Why: Spark parses and analyses the default of every parameter a bound procedure declares, on
 * every call, each a whole analyzer run (~1 ms); {@code incr.run} declares twelve, so a no-op run
 * spent more time there than in the procedure. A parameter the call leaves out is left out of the
 * bound procedure too, and Python, which declared it, fills in its default (the same value: the
 * SQL default is written from it, {@code Param.sql_default}). A parameter the call passes is bound
 * without its default: Spark analyses a bound parameter's default even when a value is passed (about
 * a millisecond an argument; a scheduled run passes two or three). A call Spark must refuse (an unknown
 * or repeated name, a name also given by position, a positional argument after a named one, too
 * many arguments) binds every parameter, so Spark's own checks and messages apply unchanged.
 *
 * <p>Why Java: Spark binds a procedure to a call's arguments in the JVM, during analysis, before any
 * Python runs.
 */
final class Binding {
  private final Registry.Spec spec;
  private final int[] indices;
  private final ProcedureParameter[] parameters;

  private Binding(Registry.Spec spec, int[] indices, ProcedureParameter[] from) {
    this.spec = spec;
    this.indices = indices;
    this.parameters = new ProcedureParameter[indices.length];
    for (int i = 0; i < indices.length; i++) parameters[i] = from[indices[i]];
  }

  /** Every parameter, in declared order. */
  static Binding all(Registry.Spec spec) {
    int[] indices = new int[spec.params.size()];
    for (int i = 0; i < indices.length; i++) indices[i] = i;
    return new Binding(spec, indices, spec.parameters);
  }

  /** The parameters a call whose arguments have {@code inputType} (Spark's shape of them) binds. */
  static Binding of(Registry.Spec spec, StructType inputType) {
    List<Registry.Field> params = spec.params;
    Set<String> named = new HashSet<>();
    int positional = 0;
    for (StructField arg : inputType.fields()) {
      boolean byName = arg.metadata().contains(ProcedureParameter.BY_NAME_METADATA_KEY);
      if (!byName) {
        if (!named.isEmpty()) return all(spec);
        positional++;
        continue;
      }
      String key = arg.name().toLowerCase(Locale.ROOT);
      int at = indexOf(params, key);
      if (at < 0 || at < positional || !named.add(key)) return all(spec);
    }
    if (positional > params.size()) return all(spec);
    List<Integer> chosen = new ArrayList<>();
    for (int i = 0; i < params.size(); i++) {
      Registry.Field p = params.get(i);
      if (i < positional || p.defaultSql == null || named.contains(p.name.toLowerCase(Locale.ROOT))) chosen.add(i);
    }
    int[] indices = new int[chosen.size()];
    for (int i = 0; i < indices.length; i++) indices[i] = chosen.get(i);
    return new Binding(spec, indices, spec.passed);
  }

  private static int indexOf(List<Registry.Field> params, String lowerName) {
    for (int i = 0; i < params.size(); i++) {
      if (params.get(i).name.toLowerCase(Locale.ROOT).equals(lowerName)) return i;
    }
    return -1;
  }

  ProcedureParameter[] parameters() {
    return parameters.clone();
  }

  /** The bound input row (one value per bound parameter) as a JSON object keyed by parameter name. */
  String argsJson(InternalRow input) {
    return spec.argsJson(indices, input);
  }
}
