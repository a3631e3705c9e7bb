-- The scheduled job for spark-sql: build what is due, and exit non-zero if any batch failed.
--
--   pyspark-incr spark-sql -f sql/jobs/run.sql                      # embedded default, prod, now
--   spark-sql <plugin conf> -f sql/jobs/run.sql \
--       --hivevar env=prod --hivevar execution_time='2024-01-09 06:00:00' --hivevar select='shop.*'
--
-- Variables (spark-sql --hivevar NAME=VALUE, or --define): an undefined one reads as empty,
-- and empty means the procedure's default:
--   env             environment (default: spark.incr.defaultEnv, else prod)
--   execution_time  what "now" is, ISO timestamp in UTC (default: the wall clock)
--   select          models to limit the run to, as for incr.run's select (default: all)
--
-- raise_on_failure: once every batch has finished and the state is recorded, a failed batch
-- fails this statement, so spark-sql exits with code 1 and prints the failed models and their
-- errors on stderr. The rows of every step are in incr.history.
CALL incr.run(
  env => '${env}',
  execution_time => '${execution_time}',
  select => '${select}',
  raise_on_failure => true
);
