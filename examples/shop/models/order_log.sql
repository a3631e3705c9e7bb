MODEL (
  name shop.order_log,
  kind INCREMENTAL_UNMANAGED,
  description 'Append-only log: each run appends the orders of the days it covers.'
);

SELECT order_id, customer_id, amount, order_date, @execution_ds AS loaded_on
FROM shop_raw.orders
WHERE order_date BETWEEN @start_ds AND @end_ds
