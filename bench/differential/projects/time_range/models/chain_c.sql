MODEL (
  name tr.chain_c,
  kind FULL,
  cron '@daily'
);

SELECT COUNT(*) AS days, SUM(total) AS total, MIN(ds) AS first_ds, MAX(ds) AS last_ds
FROM tr.chain_b
