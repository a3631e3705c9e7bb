MODEL (
  name kinds.price_history,
  kind SCD_TYPE_2_BY_COLUMN (unique_key item_id, columns [price])
);

SELECT item_id, name, price FROM raw.items
