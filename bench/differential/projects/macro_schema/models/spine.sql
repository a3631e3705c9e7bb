MODEL (
  name ms.spine,
  kind FULL
);

WITH days AS (
  @DATE_SPINE('day', '2024-01-01', '2024-01-10')
)
SELECT * FROM days
