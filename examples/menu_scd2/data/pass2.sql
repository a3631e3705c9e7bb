-- Pass 2: the Chicken Sandwich costs 12.99, the Cheeseburger is gone, a Milkshake is new.
INSERT OVERWRITE stg.current_menu_items VALUES
  (1, 'Chicken Sandwich', 12.99, TIMESTAMP'2020-01-02 00:00:00'),
  (3, 'French Fries', 4.99, TIMESTAMP'2020-01-01 00:00:00'),
  (4, 'Milkshake', 3.99, TIMESTAMP'2020-01-02 00:00:00');
