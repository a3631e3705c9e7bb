-- Pass 3: the Chicken Sandwich costs 14.99, the Cheeseburger is back, the Milkshake is renamed.
-- The spec's source table gives the renamed Milkshake updated_at 2020-01-02, but its result table
-- (and the rename it describes) needs 2020-01-03: by time, an unchanged updated_at is no change.
INSERT OVERWRITE stg.current_menu_items VALUES
  (1, 'Chicken Sandwich', 14.99, TIMESTAMP'2020-01-03 00:00:00'),
  (2, 'Cheeseburger', 8.99, TIMESTAMP'2020-01-03 00:00:00'),
  (3, 'French Fries', 4.99, TIMESTAMP'2020-01-01 00:00:00'),
  (4, 'Chocolate Milkshake', 3.99, TIMESTAMP'2020-01-03 00:00:00');
