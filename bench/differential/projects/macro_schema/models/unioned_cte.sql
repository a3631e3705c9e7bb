MODEL (
  name ms.unioned_cte,
  kind FULL
);

WITH both AS (
  @UNION('all', ms.keys, ms.keys)
)
SELECT * FROM both
