MODEL (
  name shop.customers_latest,
  kind INCREMENTAL_BY_UNIQUE_KEY (
    unique_key customer_id,
    when_matched WHEN MATCHED THEN UPDATE SET target.last_order = source.last_order
  )
);

SELECT customer_id, MAX(order_date) AS last_order
FROM shop_raw.orders
WHERE order_date BETWEEN @start_date AND @end_date
GROUP BY customer_id
