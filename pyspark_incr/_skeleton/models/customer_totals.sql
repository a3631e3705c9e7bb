MODEL (
  name incr_example.customer_totals,
  kind FULL,
  grain customer_id,
  description 'Lifetime orders and revenue per customer, rebuilt whole when a new day is due.'
);

SELECT
  customer_id,
  SUM(orders) AS orders,
  SUM(revenue) AS revenue,
  MAX(order_date) AS last_order_date
FROM incr_example.daily_revenue
GROUP BY customer_id
