-- The events as they stand at 06:00 on 2024-03-01: one every 10 minutes from midnight, 36 in all.
-- Deterministic: ids 0..35, the type and value follow from the id.
CREATE DATABASE IF NOT EXISTS hourly_raw;
CREATE TABLE IF NOT EXISTS hourly_raw.events (event_id INT, event_ts TIMESTAMP, event_type STRING, value INT)
USING parquet;
INSERT OVERWRITE hourly_raw.events
SELECT CAST(id AS INT) AS event_id,
       TIMESTAMP'2024-03-01 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 10 AS INT), 0) AS event_ts,
       element_at(array('view', 'click', 'buy'), CAST(id % 3 + 1 AS INT)) AS event_type,
       CAST(id % 5 + 1 AS INT) AS value
FROM range(36);
