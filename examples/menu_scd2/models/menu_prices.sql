-- The same source, versioned by column: only a change of price makes a new version,
-- and versions start at the run's execution time (there is no updated_at to trust).
MODEL (
  name db.menu_prices,
  kind SCD_TYPE_2_BY_COLUMN (
    unique_key id,
    columns [price]
  )
);

SELECT id, name, price
FROM stg.current_menu_items
