MODEL (
  name uk.latest_by_customer,
  kind INCREMENTAL_BY_UNIQUE_KEY (unique_key customer_id)
);

SELECT customer_id, MAX(ds) AS last_ds, COUNT(*) AS events, SUM(amount) AS total
FROM raw.events
WHERE ds BETWEEN @start_ds AND @end_ds
GROUP BY customer_id
