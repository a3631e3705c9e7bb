MODEL (
  name shop.order_feed,
  kind INCREMENTAL_BY_CURSOR (
    cursor_column updated_at,
    initial_value '2024-01-01'
  )
);

SELECT order_id, amount, updated_at FROM shop_raw.orders
