MODEL (
  name ms.star,
  kind INCREMENTAL_BY_TIME_RANGE (time_column ds)
);

SELECT @STAR(raw.events, e, exclude := [channel, status], prefix := 'ev_'), e.ds
FROM raw.events AS e
WHERE e.ds BETWEEN @start_ds AND @end_ds
