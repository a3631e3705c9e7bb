MODEL (
  name hd.price_history,
  kind SCD_TYPE_2_BY_COLUMN (unique_key item_id, columns [price], invalidate_hard_deletes true)
);

SELECT item_id, name, price FROM raw.items
