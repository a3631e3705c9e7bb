package pysparkincr;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * Lets a SQLMesh {@code MODEL (...); SELECT ...} (or {@code CREATE MODEL ...}) typed straight into
 * Spark SQL become {@code CALL incr.create_model(definition => '...')}; everything else passes
 * through untouched. Also where the {@code incr} catalog gets declared for the session, because
 * the parser is the first thing that sees a statement and the session is complete by then.
 *
 * <p>The spark-sql CLI splits its input on ';' before parsing, so there a MODEL block and its
 * query arrive as two statements; {@code spark.sql(...)}, JDBC and notebooks pass one string.
 *
 * <p>Why Java: Spark's parser is a JVM interface, and SQL typed into spark-sql or JDBC is parsed
 * before any Python could see it.
 */
public final class IncrParser implements ParserInterface {
  public static final String CATALOG_CONF = "spark.sql.catalog.incr";

  private final SparkSession session;
  private final ParserInterface delegate;
  private volatile boolean catalogDeclared;

  public IncrParser(SparkSession session, ParserInterface delegate) {
    this.session = session;
    this.delegate = delegate;
  }

  /** The CALL that replaces {@code sql}, or null when {@code sql} is not a MODEL statement. */
  public static String rewrite(String sql) {
    int i = skipSpaceAndComments(sql, 0);
    int model = i;
    if (keywordAt(sql, i, "CREATE")) {
      model = skipSpaceAndComments(sql, i + 6);
      if (model == i + 6 || !keywordAt(sql, model, "MODEL")) return null;
    } else if (!keywordAt(sql, i, "MODEL")) {
      return null;
    }
    String definition = sql.substring(model).stripTrailing();
    String literal = definition.replace("\\", "\\\\").replace("'", "\\'");
    return "CALL incr.create_model(definition => '" + literal + "')";
  }

  /** {@code word} at {@code i}, case-insensitively, followed by whitespace, '(' or a comment. */
  private static boolean keywordAt(String s, int i, String word) {
    int end = i + word.length();
    if (!s.regionMatches(true, i, word, 0, word.length()) || end >= s.length()) return false;
    char c = s.charAt(end);
    return Character.isWhitespace(c) || c == '(' || s.startsWith("--", end) || s.startsWith("/*", end);
  }

  private static int skipSpaceAndComments(String s, int i) {
    while (i < s.length()) {
      if (Character.isWhitespace(s.charAt(i))) {
        i++;
      } else if (s.startsWith("--", i)) {
        int nl = s.indexOf('\n', i);
        i = nl < 0 ? s.length() : nl + 1;
      } else if (s.startsWith("/*", i)) {
        int close = s.indexOf("*/", i + 2);
        i = close < 0 ? s.length() : close + 2;
      } else {
        break;
      }
    }
    return i;
  }

  private String prepare(String sql) {
    declareCatalog();
    String call = rewrite(sql);
    return call == null ? sql : call;
  }

  private void declareCatalog() {
    if (catalogDeclared) return;
    try {
      if (!session.conf().getOption(CATALOG_CONF).isDefined()) {
        session.conf().set(CATALOG_CONF, IncrCatalog.class.getName());
      }
      catalogDeclared = true;
    } catch (RuntimeException notYet) {
      // session still being built; the next statement tries again
    }
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    return delegate.parsePlan(prepare(sqlText));
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext ctx) throws ParseException {
    return delegate.parsePlanWithParameters(prepare(sqlText), ctx);
  }

  @Override
  public Expression parseExpression(String sqlText) throws ParseException {
    return delegate.parseExpression(sqlText);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTableIdentifier(sqlText);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
    return delegate.parseFunctionIdentifier(sqlText);
  }

  @Override
  public Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
  }

  @Override
  public LogicalPlan parseQuery(String sqlText) throws ParseException {
    return delegate.parseQuery(sqlText);
  }

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  public StructType parseTableSchema(String sqlText) throws ParseException {
    return delegate.parseTableSchema(sqlText);
  }

  @Override
  public DataType parseDataType(String sqlText) throws ParseException {
    return delegate.parseDataType(sqlText);
  }
}
