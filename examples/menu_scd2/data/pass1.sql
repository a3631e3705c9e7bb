-- Pass 1 (the spec's starting data). Creates the source; run it before the first apply.
CREATE DATABASE IF NOT EXISTS stg;
CREATE TABLE IF NOT EXISTS stg.current_menu_items (id INT, name STRING, price DOUBLE, updated_at TIMESTAMP) USING parquet;
INSERT OVERWRITE stg.current_menu_items VALUES
  (1, 'Chicken Sandwich', 10.99, TIMESTAMP'2020-01-01 00:00:00'),
  (2, 'Cheeseburger', 8.99, TIMESTAMP'2020-01-01 00:00:00'),
  (3, 'French Fries', 4.99, TIMESTAMP'2020-01-01 00:00:00');
