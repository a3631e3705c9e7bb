MODEL (
  name bp.by_customer,
  kind INCREMENTAL_BY_PARTITION,
  partitioned_by customer_id
);

SELECT region, COUNT(*) AS deliveries, SUM(amount) AS total, customer_id
FROM raw.batch
GROUP BY customer_id, region
