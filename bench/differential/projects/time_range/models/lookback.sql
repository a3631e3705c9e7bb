MODEL (
  name tr.lookback,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds, lookback 2),
  cron '@daily'
);

SELECT ds, COUNT(*) AS events, SUM(amount) AS total
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
GROUP BY ds
