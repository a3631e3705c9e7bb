MODEL (
  name vm.time_macros,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1)
);

-- every time macro, once per daily interval; epochs and millis are cast because SQLMesh 0.236.4 on
-- Spark types a bare @start_epoch column DECIMAL(1,1) and a bare @start_millis INT, then fails to insert them
SELECT
  ds,
  @start_ds AS start_ds, @end_ds AS end_ds, @execution_ds AS execution_ds,
  @start_ts AS start_ts, @end_ts AS end_ts, @execution_ts AS execution_ts,
  @start_date AS start_date, @end_date AS end_date, @execution_date AS execution_date,
  @start_dt AS start_dt, @end_dt AS end_dt, @execution_dt AS execution_dt,
  CAST(@start_epoch AS DOUBLE) AS start_epoch, CAST(@end_epoch AS DOUBLE) AS end_epoch,
  CAST(@execution_epoch AS DOUBLE) AS execution_epoch,
  CAST(@start_millis AS BIGINT) AS start_millis, CAST(@end_millis AS BIGINT) AS end_millis,
  CAST(@execution_millis AS BIGINT) AS execution_millis,
  @start_hour AS start_hour, @end_hour AS end_hour, @execution_hour AS execution_hour
FROM (SELECT DISTINCT ds FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds) AS days
