MODEL (
  name ms.dedup,
  kind FULL
);

WITH latest AS (
  @DEDUPLICATE(raw.events, [customer_id], ['event_id DESC'])
)
SELECT customer_id, event_id, ds FROM latest
