MODEL (
  name pm.with_macros,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds)
);

SELECT
  ds,
  event_id,
  @add_one(customer_id) AS next_customer,
  @to_cents(amount) AS cents,
  @times_multiplier(amount) AS tripled,
  @flags(customer_id, 1, 2)
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
