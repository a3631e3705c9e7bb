MODEL (
  name hd.item_history,
  kind SCD_TYPE_2_BY_TIME (unique_key item_id, invalidate_hard_deletes true)
);

SELECT item_id, name, price, updated_at FROM raw.items
