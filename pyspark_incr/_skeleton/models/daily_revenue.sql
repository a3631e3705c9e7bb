MODEL (
  name incr_example.daily_revenue,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column order_date
  ),
  grain (order_date, customer_id),
  audits (
    not_null(columns := (customer_id)),
    assert_positive(column := revenue)
  ),
  description 'Orders and revenue per customer and day; each run builds only the missing days.'
);

SELECT
  order_date,
  customer_id,
  COUNT(*) AS orders,
  SUM(amount) AS revenue
FROM incr_example.seed_orders
WHERE order_date BETWEEN @start_ds AND @end_ds
  AND amount > @min_amount
GROUP BY order_date, customer_id
