MODEL (
  name incr_example.seed_orders,
  kind SEED (path '../seeds/orders.csv'),
  columns (order_id INT, customer_id INT, order_date DATE, amount DOUBLE),
  grain order_id,
  description 'Orders, loaded from seeds/orders.csv (edit the file and apply: the table is reloaded).'
);
