MODEL (
  name pym.base,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds)
);

SELECT ds, customer_id, amount FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds
