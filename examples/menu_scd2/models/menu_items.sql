-- SQLMesh's example, as the spec writes it: history by the source's updated_at.
MODEL (
  name db.menu_items,
  kind SCD_TYPE_2 (
    unique_key id,
  )
);

SELECT
  id::INT,
  name::STRING,
  price::DOUBLE,
  updated_at::TIMESTAMP
FROM
  stg.current_menu_items;
