MODEL (
  name quickstart.top_customers,
  kind VIEW,
  description 'The five customers with the highest lifetime revenue.'
);

SELECT customer_id, revenue
FROM quickstart.customer_totals
ORDER BY revenue DESC, customer_id
LIMIT 5
