MODEL (
  name vm.variables,
  kind FULL
);

@DEF(ceiling, 15);
@DEF(label, 'capped');

SELECT
  customer_id,
  @region AS region,
  @VAR('region') AS region_var,
  @VAR('missing_var', 'fallback') AS with_default,
  @label AS label,
  COUNT(*) AS events,
  SUM(amount) AS total
FROM raw.events
WHERE amount >= @min_amount AND amount < @ceiling AND customer_id <> @VAR('skip_customer')
GROUP BY customer_id
