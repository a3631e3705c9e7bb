MODEL (
  name ap.partial_hourly,
  kind INCREMENTAL_BY_TIME_RANGE (time_column hour_ts),
  cron '@hourly',
  start '2024-01-03',
  allow_partials true
);

SELECT date_trunc('HOUR', event_ts) AS hour_ts, COUNT(*) AS events
FROM raw.events
WHERE event_ts BETWEEN @start_dt AND @end_dt
GROUP BY date_trunc('HOUR', event_ts)
