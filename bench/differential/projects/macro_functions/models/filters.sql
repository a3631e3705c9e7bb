MODEL (
  name mf.filters,
  kind FULL
);

@DEF(limits, [1, 2, 3, 4]);
@DEF(doubled, x -> x * 2);

SELECT
  channel,
  @REDUCE(@FILTER(@limits, x -> x > 2), (a, b) -> a + b) AS sum_big_limits,
  @doubled(COUNT(*)) AS events_doubled,
  COUNT(*) AS events,
  SUM(@{amount_col}) AS total
FROM raw.events
WHERE channel IN (@EACH(@channels, c -> c)) OR @OR(channel IS NULL, FALSE)
GROUP BY channel
