"""What the multi-process tests and bench harnesses start: a Hive metastore service, Spark applications,
a Spark standalone cluster, and pyspark-incr installed from its wheel into a fresh venv."""
