MODEL (
  name quickstart.daily_revenue,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column event_date
  ),
  start '2024-01-01',
  cron '@daily',
  grain (event_date, customer_id),
  description 'Revenue and order count per customer and day.'
);

SELECT
  event_date,
  customer_id,
  COUNT(*) AS orders,
  SUM(amount) AS revenue
FROM quickstart_raw.events
WHERE event_date BETWEEN @start_ds AND @end_ds
GROUP BY event_date, customer_id
