MODEL (
  name mu.unioned,
  kind FULL
);

@UNION('all', mu.keys, mu.keys)
