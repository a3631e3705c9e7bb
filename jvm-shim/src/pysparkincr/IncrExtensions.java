package pysparkincr;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=pysparkincr.IncrExtensions}: the {@code incr} catalog without extra
 * conf, and MODEL statements in plain Spark SQL (see {@link IncrParser}).
 *
 * <p>Why Java: {@code spark.sql.extensions} takes JVM classes only.
 */
public final class IncrExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    Bridge.startEarly();
    extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
      @Override
      public ParserInterface apply(SparkSession session, ParserInterface delegate) {
        return new IncrParser(session, delegate);
      }
    });
    return BoxedUnit.UNIT;
  }
}
