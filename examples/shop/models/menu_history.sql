MODEL (
  name shop.menu_history,
  kind SCD_TYPE_2 (
    unique_key id,
  )
);

SELECT id::INT, name::STRING, price::DOUBLE, updated_at::TIMESTAMP
FROM (SELECT m.*, TIMESTAMP '2024-01-01 00:00:00' AS updated_at FROM shop.menu_items AS m)
