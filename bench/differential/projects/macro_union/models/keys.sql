MODEL (
  name mu.keys,
  kind FULL
);

SELECT
  event_id,
  @GENERATE_SURROGATE_KEY(event_id, channel) AS surrogate,
  @SAFE_DIV(amount, status) AS per_status,
  @SAFE_ADD(amount, NULL) AS safe_added,
  @SAFE_SUB(amount, status) AS safe_subtracted
FROM raw.events
WHERE ds < DATE'2024-01-03'
