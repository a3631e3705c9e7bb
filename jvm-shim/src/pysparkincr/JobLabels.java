package pysparkincr;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark's thread-local job properties (pool, job group, description) set and restored in one
 * py4j call each, where PySpark's {@code get/setLocalProperty} cost a round trip per property.
 *
 * <p>Why Java: speed only: the same could be done from Python with one py4j round trip per
 * property, several per batch.
 */
public final class JobLabels {
  private static final ObjectMapper JSON = new ObjectMapper();

  private JobLabels() {}

  /**
   * Set each property of {@code labelsJson} (a JSON object; null removes one) on the calling
   * thread, and return the values they had, as the JSON to hand back to restore them.
   */
  public static String swap(JavaSparkContext jsc, String labelsJson) throws IOException {
    Map<String, String> before = new LinkedHashMap<>();
    Map<?, ?> labels = JSON.readValue(labelsJson, Map.class);
    for (Map.Entry<?, ?> e : labels.entrySet()) {
      String key = (String) e.getKey();
      before.put(key, jsc.getLocalProperty(key));
      jsc.setLocalProperty(key, (String) e.getValue());
    }
    return JSON.writeValueAsString(before);
  }
}
