package pysparkincr;

/**
 * The Python side of every CALL, implemented over py4j.
 *
 * <p>Kept to two JSON-in/JSON-out methods so the shim never needs to change when a
 * procedure is added: Python owns the registry and all behaviour.
 *
 * <p>Why Java: py4j calls Python back only through a Java interface that Python implements.
 */
public interface Handler {
  /** {@code {"procedures":[{"name","description","parameters":[...],"output":[...]}]}}. */
  String registry();

  /**
   * Runs one procedure. {@code session} is the caller's SparkSession so Python can run
   * re-entrant SQL in the same session (matters for Thrift/Connect servers with many sessions);
   * {@code contextJson} is what Python would otherwise ask of it, a round trip each:
   * {@code {"session": its id, "settings": {its spark.incr.* settings}}}.
   *
   * @return {@code {"rows":[[...],...]}} or
   *     {@code {"error":{"type":...,"condition":...,"sqlstate":...,"message":...,"trace":...}}}
   *     ({@code trace} only for an internal bug or when traces were asked for)
   */
  String call(String procedure, String argsJson, String contextJson, Object session);
}
