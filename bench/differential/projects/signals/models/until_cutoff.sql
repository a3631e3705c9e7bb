MODEL (
  name sg.until_cutoff,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
  signals (ends_by(cutoff := '2024-01-05'))
);

SELECT ds, COUNT(*) AS events FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds
