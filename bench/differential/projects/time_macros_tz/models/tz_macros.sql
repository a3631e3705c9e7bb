MODEL (
  name tz.macros,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1)
);

-- the time zone forms of the time macros (tstz, dtntz)
SELECT
  ds,
  @start_tstz AS start_tstz, @end_tstz AS end_tstz, @execution_tstz AS execution_tstz,
  @start_dtntz AS start_dtntz, @end_dtntz AS end_dtntz, @execution_dtntz AS execution_dtntz
FROM raw.days
WHERE ds BETWEEN @start_ds AND @end_ds
