MODEL (
  name quickstart.customer_totals,
  kind FULL,
  cron '@daily',
  grain customer_id,
  description 'Lifetime revenue per customer, rebuilt every day.'
);

SELECT
  customer_id,
  SUM(orders) AS orders,
  SUM(revenue) AS revenue,
  MAX(event_date) AS last_order_date
FROM quickstart.daily_revenue
GROUP BY customer_id
