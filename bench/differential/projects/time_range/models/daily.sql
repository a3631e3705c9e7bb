MODEL (
  name tr.daily,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
  cron '@daily'
);

SELECT ds, customer_id, COUNT(*) AS events, SUM(amount) AS total
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
GROUP BY ds, customer_id
