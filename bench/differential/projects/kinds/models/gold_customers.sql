MODEL (
  name kinds.gold_customers,
  kind VIEW
);

SELECT customer_id, name, total FROM kinds.customer_totals WHERE tier = 'gold'
