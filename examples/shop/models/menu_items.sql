MODEL (
  name shop.menu_items,
  kind SEED (path '../seeds/menu_items.csv'),
  columns (id INT, name STRING, price DOUBLE),
  description 'The menu, from a CSV seed.'
);
