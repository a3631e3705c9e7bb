"""Table diff: two tables, or one model in two environments, compared in Spark with one join.

:mod:`~pyspark_incr.diff.sides` finds what is compared (a table, or the table an environment
holds for a model) and on which key; :mod:`~pyspark_incr.diff.schema` compares the columns;
:mod:`~pyspark_incr.diff.rows` compares the rows: one full outer join on the key, its counts in
the same pass as the bounded sample, so nothing beyond the sample reaches the driver.
"""

from pyspark_incr.diff.rows import Counts, DiffResult, Sample, compare
from pyspark_incr.diff.schema import SchemaDiff, schema_diff
from pyspark_incr.diff.sides import Side, env_sides, key_columns, table_side

__all__ = ["Counts", "DiffResult", "Sample", "SchemaDiff", "Side", "compare", "env_sides", "key_columns",
           "schema_diff", "table_side"]
