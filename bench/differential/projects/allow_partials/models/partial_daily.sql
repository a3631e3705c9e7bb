MODEL (
  name ap.partial_daily,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
  cron '0 6 * * *',
  allow_partials true
);

SELECT to_date(event_ts) AS ds, COUNT(*) AS events, MAX(event_ts) AS last_event, @end_ts AS built_through
FROM raw.events
WHERE event_ts BETWEEN @start_dt AND @end_dt
GROUP BY to_date(event_ts)
