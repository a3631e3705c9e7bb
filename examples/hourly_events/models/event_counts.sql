-- Events and their total value per hour and event type.
MODEL (
  name hourly.event_counts,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column event_hour,
    batch_size 2,   -- at most two hours per job
    lookback 2      -- each run that builds a new hour also rebuilds the two hours before it
  ),
  cron '@hourly',
  grain (event_hour, event_type),
  description 'Events per hour and type; rows up to two hours late are picked up by the next run.'
);

SELECT
  DATE_TRUNC('HOUR', event_ts) AS event_hour,
  event_type,
  COUNT(*) AS events,
  SUM(value) AS total_value
FROM hourly_raw.events
WHERE event_ts BETWEEN @start_dt AND @end_dt
GROUP BY 1, 2
