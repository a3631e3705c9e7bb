"""Services the multi-application tests and bench harnesses start: a Hive metastore, Spark applications."""
