MODEL (
  name shop.menu_prices,
  kind SCD_TYPE_2_BY_COLUMN (
    unique_key id,
    columns [price]
  )
);

SELECT id, name, price FROM shop.menu_items
