-- A custom audit, called from a model's `audits (...)` like the built-in ones. @this_model is
-- the rows a batch just wrote; the query returns the rows that break the rule (none: it passes).
AUDIT (
  name assert_positive
);
SELECT * FROM @this_model WHERE @column <= 0;
