-- Written in DuckDB's dialect, transpiled to Spark SQL.
MODEL (
  name shop.daily_orders,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column order_date,
    batch_size 7
  ),
  dialect duckdb,
  grain (order_date, item_name),
  description 'Orders and revenue per day and menu item.',
  column_descriptions (
    order_date = 'Day of the orders',
    revenue = 'Sum of order amounts'
  ),
  tags (silver, sales),
  -- Custom audits from audits/amounts.sql.
  audits (
    assert_positive(column := revenue),
    assert_average_at_least(total := revenue, count := orders, minimum := 1)
  )
);

SELECT
  order_date::DATE AS order_date,
  item_name::TEXT AS item_name,
  COUNT(*)::INT AS orders,
  SUM(amount)::DOUBLE AS revenue
FROM shop.orders_enriched
WHERE order_date BETWEEN @start_ds AND @end_ds
GROUP BY 1, 2
