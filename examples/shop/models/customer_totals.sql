MODEL (
  name shop.customer_totals,
  kind FULL,
  grain customer_id,
  description 'Lifetime revenue per customer.',
  column_descriptions (customer_id = 'The customer', revenue = 'Lifetime revenue'),
  tags (gold),
  terms ('sales.customer_value'),
  assertions (not_null(columns := (customer_id)), unique_values(columns := (customer_id)))
);

SELECT customer_id, COUNT(*) AS orders, SUM(amount) AS revenue
FROM shop.orders_enriched
GROUP BY customer_id
