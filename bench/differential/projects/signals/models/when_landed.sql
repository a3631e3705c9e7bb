MODEL (
  name sg.when_landed,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1),
  signals (landed())
);

SELECT ds, SUM(amount) AS total FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds
