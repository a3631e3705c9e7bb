MODEL (
  name kinds.customer_totals,
  kind FULL
);

SELECT c.id AS customer_id, c.name, c.tier, COUNT(*) AS events, SUM(e.amount) AS total
FROM raw.events AS e
JOIN kinds.customers AS c ON c.id = e.customer_id
WHERE e.ds < DATE'2024-01-06'
GROUP BY c.id, c.name, c.tier
