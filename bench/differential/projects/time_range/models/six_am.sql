MODEL (
  name tr.six_am,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
  cron '0 6 * * *'
);

SELECT ds, COUNT(*) AS events
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
GROUP BY ds
