"""``python -m pyspark_incr.bridge.worker``: the Python half for SQL-only clients.

Started by the JVM shim (``pysparkincr.Bridge``) in spark-sql, the Thrift
server or Spark Connect, which have no Python of their own. It attaches to that
JVM's SparkContext over the py4j server the shim started, registers a
:class:`~pyspark_incr.bridge.handler.Handler`, and lives exactly as long as the
stdin pipe the JVM holds open.
"""

from __future__ import annotations

import logging
import os
import sys


def main() -> None:
    from pyspark_incr.bridge.session import procedures_loading

    loading = procedures_loading()  # beside attaching to the JVM
    from pyspark import SparkContext
    from pyspark.java_gateway import ensure_callback_server_started, launch_gateway
    from pyspark.sql import SparkSession

    gateway = launch_gateway()  # PYSPARK_GATEWAY_PORT/SECRET: connect, don't launch
    jvm = gateway.jvm
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
    sc = SparkContext(gateway=gateway, jsc=jsc)
    # Claim the JVM's own default session first, so wrapping a caller's session later never
    # makes that caller the JVM-wide default.
    default = jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession()
    if default.isDefined():
        SparkSession(sc, jsparkSession=default.get())
    loading.join()
    from pyspark_incr.bridge.handler import Handler, load_procedures

    load_procedures()
    # SQL-only clients see progress in the server log: the JVM forwards our stderr.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # py4j logs every round trip at INFO
    ensure_callback_server_started(gateway)
    jvm.pysparkincr.Bridge.registerWorker(Handler())
    sys.stdin.buffer.read()  # EOF: the JVM is gone
    os._exit(0)  # skip interpreter teardown: nothing to flush, and py4j threads may block it


if __name__ == "__main__":
    main()
