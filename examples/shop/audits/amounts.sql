-- Custom audits, called from a model's `audits (...)` like the built-ins.
-- @this_model is the rows a batch just wrote; each query returns the rows that break the rule.

AUDIT (
  name assert_positive,
  defaults (threshold := 0)
);
SELECT * FROM @this_model WHERE @column <= @threshold;

-- Written in DuckDB's dialect, transpiled to Spark; non-blocking: a failure only warns.
AUDIT (
  name assert_average_at_least,
  dialect duckdb,
  blocking false
);
SELECT * FROM @this_model WHERE (@total / @count)::DOUBLE < @minimum;
