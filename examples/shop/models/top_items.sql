MODEL (
  name shop.top_items,
  kind VIEW,
  description 'Items by revenue.'
);

SELECT item_name, SUM(revenue) AS revenue
FROM shop.daily_orders
GROUP BY item_name
