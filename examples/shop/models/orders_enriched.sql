-- Inlined into every model that reads it: no table of its own.
MODEL (
  name shop.orders_enriched,
  kind EMBEDDED
);

SELECT o.order_id, o.customer_id, o.order_date, o.updated_at, o.amount, m.name AS item_name
FROM shop_raw.orders AS o
JOIN shop.menu_items AS m ON m.id = o.item_id
WHERE o.amount >= @min_amount
