MODEL (
  name kinds.customers,
  kind SEED (path '../seeds/customers.csv'),
  columns (id INT, name STRING, tier STRING)
);
