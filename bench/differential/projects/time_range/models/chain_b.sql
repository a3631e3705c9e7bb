MODEL (
  name tr.chain_b,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
  cron '@daily'
);

SELECT ds, SUM(total) AS total, MAX(events) AS busiest_customer_events
FROM tr.daily
WHERE ds BETWEEN @start_ds AND @end_ds
GROUP BY ds
