MODEL (
  name kinds.item_history,
  kind SCD_TYPE_2_BY_TIME (unique_key item_id)
);

SELECT item_id, name, price, updated_at FROM raw.items
