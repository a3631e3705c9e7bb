MODEL (
  name mf.sql_macro,
  kind FULL
);

@DEF(col, 'customer_id');

SELECT @SQL(@col) AS customer_id, COUNT(*) AS events
FROM raw.events
GROUP BY @SQL(@col)
