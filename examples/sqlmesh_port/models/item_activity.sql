-- Not part of `sqlmesh init`: DuckDB-only syntax, transpiled to Spark SQL by sqlglot.
MODEL (
  name sqlmesh_example.item_activity,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column event_date,
    batch_size 3,
  ),
  start '2020-01-01',
  cron '@daily',
  grain (event_date, item_id),
);

@DEF(first_day, '2020-01-01');

SELECT
  event_date,
  item_id,
  COUNT(*)::INTEGER AS num_orders,                         -- :: casts
  strftime(event_date, '%Y-%m') AS event_month,            -- strftime, DuckDB's format codes
  date_trunc('week', event_date)::DATE AS event_week,      -- date_trunc
  date_diff('day', @first_day::DATE, event_date) AS day_number,
  epoch_ms(@start_millis) AS interval_start,               -- epoch_ms: milliseconds to a timestamp
  list_sort(list(id)) AS order_ids,                        -- list aggregate and list function
  [item_id, item_id * 10] AS item_codes,                   -- list literal
  {'item': item_id, 'orders': COUNT(*)::INTEGER} AS summary, -- struct literal
  'item-' || item_id::VARCHAR AS label,
FROM sqlmesh_example.incremental_model
WHERE event_date BETWEEN @start_date AND @end_date
GROUP BY ALL
