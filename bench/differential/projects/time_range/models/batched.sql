MODEL (
  name tr.batched,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 2),
  cron '@daily'
);

-- one row per batch and day: the batch bounds show how the days were grouped
SELECT ds, @start_ds AS batch_start, @end_ds AS batch_end, COUNT(*) AS events
FROM raw.events
WHERE ds BETWEEN @start_date AND @end_date
GROUP BY ds
