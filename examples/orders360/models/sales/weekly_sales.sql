-- The guide's weekly_sales model. Two deliberate differences, both needed for correct weeks:
--   * interval_unit week: a cron of @weekly alone gives day intervals (as in SQLMesh), and a day's
--     batch cannot hold a row dated on its week's Monday;
--   * it sums daily_sales' own columns: the guide's query reads order_id and total_amount, which
--     daily_sales does not have.
MODEL (
  name sales.weekly_sales,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column order_date,  -- This column contains the date
    batch_size 1             -- Process 1 week at a time
  ),
  start '2024-12-30',        -- The Monday of the week holding 2025-01-01
  cron '@weekly',
  interval_unit week,
  grain [order_date],        -- One row per week
  description 'Weekly aggregated sales metrics',
  assertions (
    unique_values(columns := (order_date)),
    accepted_range(column := total_orders, min_v := 1, max_v := 100)
  )
);

SELECT
  DATE_TRUNC('week', order_date) AS order_date,
  SUM(total_orders)::INTEGER AS total_orders,
  SUM(total_revenue)::FLOAT AS total_revenue,
  (SUM(total_revenue) / SUM(total_orders))::FLOAT AS avg_order_value
FROM sales.daily_sales
WHERE order_date BETWEEN @start_ds AND @end_ds  -- Filter by time range
GROUP BY DATE_TRUNC('week', order_date)
ORDER BY order_date
