MODEL (
  name mf.each_if,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds)
);

@DEF(statuses, [0, 1, 2]);
@DEF(with_total, TRUE);

SELECT
  ds,
  customer_id,
  @EACH(@statuses, s -> SUM(CASE WHEN status = s THEN 1 ELSE 0 END) AS status_@s),
  @IF(@with_total, SUM(amount) AS total),
  @IF(1 > 2, 'never' AS never_there),
  @EVAL(5 + 1) AS six
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
  AND @REDUCE(@EACH([event_id, customer_id], c -> c >= 0), (a, b) -> a AND b)
  AND @AND(amount >= 0, TRUE)
GROUP BY ds, customer_id
