"""The bridge between Spark's JVM and the Python engine.

``jar`` builds the Java shim, ``session`` puts it into a Spark session,
``handler`` answers its calls, ``worker`` hosts the handler for JVMs without
Python (spark-sql, Thrift server, Spark Connect).
"""
