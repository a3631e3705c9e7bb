-- What arrives between 06:00 and 07:00: the 06:xx hour, plus two late events of earlier hours.
INSERT INTO hourly_raw.events
SELECT CAST(id AS INT), TIMESTAMP'2024-03-01 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 10 AS INT), 0),
       element_at(array('view', 'click', 'buy'), CAST(id % 3 + 1 AS INT)), CAST(id % 5 + 1 AS INT)
FROM range(36, 42);
INSERT INTO hourly_raw.events VALUES
  -- 04:30 is within the lookback of the 07:00 run (it rebuilds 04:00-06:00 and builds 06:00-07:00)
  (100, TIMESTAMP'2024-03-01 04:30:00', 'late', 10),
  -- 01:30 is not: that hour was built at 06:00 and is not looked back at again
  (101, TIMESTAMP'2024-03-01 01:30:00', 'late', 20);
