-- The pyspark-incr quickstart, in plain Spark SQL (CALL statements only).
-- Run from the repository root:  pyspark-incr spark-sql -f sql/quickstart.sql

-- Generated raw events: 90 days from 2024-01-01, 40 events a day over 7 customers.
CREATE DATABASE IF NOT EXISTS quickstart_raw;
CREATE TABLE IF NOT EXISTS quickstart_raw.events USING parquet AS
SELECT
  id AS event_id,
  DATE_ADD(DATE'2024-01-01', CAST(id DIV 40 AS INT)) AS event_date,
  CAST(id * 7919 % 7 AS INT) AS customer_id,
  CAST(10 + id * 104729 % 900 / 10.0 AS DECIMAL(10, 2)) AS amount
FROM range(0, 3600);

-- What would change, and which days need a backfill (changes nothing).
CALL incr.plan(project => 'examples/quickstart', execution_time => '2024-01-08 06:00:00');

-- Build it: 7 daily intervals of daily_revenue, then customer_totals and the view.
CALL incr.apply(project => 'examples/quickstart', execution_time => '2024-01-08 06:00:00');

-- The scheduled job at the same moment: nothing is due.
CALL incr.run(execution_time => '2024-01-08 06:00:00');

-- One day later: exactly one new daily interval (2024-01-08), and the FULL rebuild.
CALL incr.run(execution_time => '2024-01-09 06:00:00');

CALL incr.status(execution_time => '2024-01-09 06:00:00');

SELECT * FROM quickstart.top_customers;
