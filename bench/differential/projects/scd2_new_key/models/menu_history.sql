MODEL (
  name menu.history,
  kind SCD_TYPE_2_BY_TIME (unique_key id)
);

SELECT id, name, price, updated_at FROM raw.menu
