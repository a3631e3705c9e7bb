-- The orders the shop system wrote, loaded from seeds/raw_orders.csv (deterministic: no generator to run).
MODEL (
  name raw.raw_orders,
  kind SEED (path '../../seeds/raw_orders.csv'),
  columns (order_id INTEGER, customer_id INTEGER, order_date DATE, total_amount DECIMAL(10, 2)),
  grain order_id,
  description 'Raw orders, one row per order'
);
