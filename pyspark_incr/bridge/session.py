"""Getting the plugin into a Spark session: at build time, into a running one, or for spark-sql.

Three entry points because there are three situations: a session about to be
built (:func:`configure_spark_with_incr`, like delta's
``configure_spark_with_delta_pip``), a session already running in a notebook
(:func:`attach`), and a SQL-only JVM with no Python of its own
(:func:`plugin_submit_command`: spark-sql, the Thrift and the Connect servers,
where the shim starts the worker itself).
"""

from __future__ import annotations

import importlib
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import SparkSession

from pyspark_incr.bridge.jar import shim_jar
from pyspark_incr.errors import BridgeError

CATALOG_CONF = "spark.sql.catalog.incr"
CATALOG_CLASS = "pysparkincr.IncrCatalog"
EXTENSIONS_CLASS = "pysparkincr.IncrExtensions"
PYTHON_CONF = "spark.incr.python"


def configure_spark_with_incr(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add the shim to ``builder``: driver classpath, SQL extensions and the ``incr`` catalog.

    The returned builder's ``getOrCreate()`` also runs :func:`attach`, so CALLs from
    this Python process are served in-process (and an already running JVM, which
    ignores the classpath setting, still gets the jar).
    """
    options = builder._options  # the builder keeps no public getter; delta's helper reads it too
    jar = str(shim_jar())
    builder.config("spark.driver.extraClassPath", _join(options.get("spark.driver.extraClassPath"), jar, os.pathsep))
    builder.config("spark.sql.extensions", _join(options.get("spark.sql.extensions"), EXTENSIONS_CLASS, ","))
    builder.config(CATALOG_CONF, CATALOG_CLASS)
    if PYTHON_CONF not in options:
        builder.config(PYTHON_CONF, sys.executable)
    create = builder.getOrCreate

    def get_or_create() -> SparkSession:
        loading = procedures_loading()
        try:
            spark = create()
        finally:
            loading.join()
        return _attach_classic(spark)

    builder.getOrCreate = get_or_create  # type: ignore[method-assign]
    return builder


#: Packages of submodules that both the procedures and Spark's session start import (py4j's first call with
#: arguments loads pyspark.testing.utils, and with it numpy, pandas and pyarrow). On Python 3.11 two threads
#: importing one package's modules in different orders can fail with a _DeadlockError (CPython gh-83065), so
#: these are imported before the session starts; what the procedures import after them, Spark's start does not.
SHARED_IMPORTS = ("pyarrow.compute", "pyarrow.csv", "pyarrow.parquet", "dateutil.relativedelta", "dateutil.tz")


def procedures_loading() -> threading.Thread:
    """Start importing the procedures, to go on while the JVM starts: a new process's JVM and session take
    seconds during which this process mostly waits, and the procedures' imports then cost nothing.

    :data:`SHARED_IMPORTS` come first, in the caller's thread, before this returns (the session's start would
    import most of them itself). A failed import is left for :func:`register_handler` (or the worker), which
    imports again in the caller's thread and raises it there. Join the thread before importing anything else.
    """
    try:
        for name in SHARED_IMPORTS:
            importlib.import_module(name)
    except ImportError:
        pass
    loading = threading.Thread(target=_load_procedures_quietly, name="pyspark-incr-imports", daemon=True)
    loading.start()
    return loading


def _load_procedures_quietly() -> None:
    try:
        from pyspark_incr.bridge.handler import load_procedures

        load_procedures()
    except BaseException:  # noqa: BLE001 - raised again, where it belongs, by the caller's own import
        pass


def attach(spark: SparkSession, *, env: str | None = None) -> SparkSession:
    """Make ``CALL incr.*`` work in ``spark`` now, served by this Python process. Idempotent.

    Works on a session whose JVM never heard of the shim: the jar is added to the
    driver's class loader and the catalog declared at runtime, for this session and
    (through the SparkContext's conf) for sessions created later.

    ``env`` sets ``spark.incr.defaultEnv`` for this session only: CALLs without
    ``env`` then plan, apply and run there. Inside IPython or Jupyter, a cell ending
    with a CALL shows the procedure's rows as a table (see ``bridge/notebook.py``).
    """
    if not hasattr(spark, "_jsparkSession"):
        raise BridgeError(
            "pyspark-incr: attach() needs a classic (non Spark Connect) session; a Spark Connect session "
            "needs no attach, the server serves CALL incr.*: start it with `pyspark-incr connect-server` "
            "(then SparkSession.builder.remote('sc://localhost:15002')), or start your own Connect server with "
            f"--driver-class-path {shim_jar()} --conf spark.sql.extensions={EXTENSIONS_CLASS}"
        )
    bridge = _bridge_class(spark)
    if spark.conf.get(CATALOG_CONF, None) is None:
        spark.conf.set(CATALOG_CONF, CATALOG_CLASS)
        spark.sparkContext._jsc.sc().conf().setIfMissing(CATALOG_CONF, CATALOG_CLASS)
    if not bridge.hasInProcessHandler():
        register_handler(spark)
    if env is not None:
        from pyspark_incr.config import DEFAULT_ENV
        from pyspark_incr.plan.environment import check_env

        # the session's conf, never the SparkContext's: no other session inherits it
        spark.conf.set(DEFAULT_ENV, check_env(env))
    from pyspark_incr.bridge.notebook import show_procedure_results_as_tables

    show_procedure_results_as_tables()
    return spark


def register_handler(spark: SparkSession) -> None:
    """Register a fresh in-process handler; call again after changing ``REGISTRY`` at runtime
    (the shim caches the registry per handler)."""
    from pyspark.java_gateway import ensure_callback_server_started

    from pyspark_incr.bridge.handler import Handler, load_procedures

    load_procedures()
    ensure_callback_server_started(spark.sparkContext._gateway)
    _bridge_class(spark).register(Handler())


def _attach_classic(spark: SparkSession) -> SparkSession:
    return attach(spark) if hasattr(spark, "_jsparkSession") else spark


def _bridge_class(spark: SparkSession) -> Any:
    """``pysparkincr.Bridge``, loading the jar into the running driver if needed.

    py4j and Spark's catalog loading both resolve classes through the calling
    thread's context class loader. In a PySpark driver every py4j thread has
    spark-submit's ``MutableURLClassLoader`` there, while ``ADD JAR`` only reaches
    the session's jar loader (a child of it) and that one thread's context: a
    catalog used from another Python thread would then fail to load. So the jar
    goes into that shared parent, and every thread sees one ``Bridge`` class and
    its registered handler.
    """
    from py4j.java_gateway import JavaClass

    bridge = spark._jvm.pysparkincr.Bridge
    if isinstance(bridge, JavaClass):
        return bridge
    jar = str(shim_jar())
    shared = spark._jsparkSession.sharedState().jarClassLoader()
    parent = shared.getParent()
    if parent is not None and parent.getClass().getName() == "org.apache.spark.util.MutableURLClassLoader":
        parent.addURL(spark._jvm.java.io.File(jar).toURI().toURL())
    else:  # an unusual launcher: fall back to ADD JAR and make it this thread's loader
        spark._jsparkSession.sessionState().resourceLoader().addJar(jar)
        spark._jvm.java.lang.Thread.currentThread().setContextClassLoader(shared)
    bridge = spark._jvm.pysparkincr.Bridge
    if not isinstance(bridge, JavaClass):
        raise BridgeError(f"pyspark-incr: the Spark driver cannot load pysparkincr.Bridge from {jar}")
    return bridge


def _join(existing: str | None, value: str, sep: str) -> str:
    parts = [p for p in (existing or "").split(sep) if p]
    return sep.join(parts if value in parts else [*parts, value])


# --- the embedded default: one directory holds metastore, warehouse and logs ---------------


def embedded_conf(home: Path | str) -> dict[str, str]:
    """Spark settings of the embedded default (local[2], Hive catalog in Derby under ``home``)."""
    home = Path(home).resolve()
    return {
        "spark.master": "local[2]",
        "spark.app.name": "pyspark-incr",
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Models and batches built at the same time share the cores fairly (in the pool "incr").
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(Path(__file__).with_name("fairscheduler.xml")),
        # Intervals are UTC; showing procedure timestamps in UTC keeps them readable as such.
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}",
    }


def embedded_builder(home: Path | str) -> SparkSession.Builder:
    """A builder for the embedded default, with the plugin configured.

    Embedded Derby admits one process at a time per ``home``; later processes
    see the tables earlier ones created.
    """
    Path(home).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in embedded_conf(home).items():
        builder = builder.config(key, value)
    return configure_spark_with_incr(builder.enableHiveSupport())


def embedded_session(home: Path | str) -> SparkSession:
    """The embedded session for ``home``, attached (the configured builder's getOrCreate attaches)."""
    return embedded_builder(home).getOrCreate()


SPARK_SQL_CLASS = "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver"


#: spark-sql's console logging: errors only (``--driver-java-options`` with a log4j2 file of your own replaces it).
CLI_LOG_CONFIG = Path(__file__).with_name("log4j2-cli.properties")


def spark_sql_command(home: Path | str, args: list[str]) -> list[str]:
    """argv running pyspark's own spark-sql (``SparkSQLCLIDriver``) on the embedded ``home`` with the plugin.

    Results print with column headers; the console logs errors only, unless the user brings a
    log4j2 configuration (``$SPARK_CONF_DIR/log4j2.properties`` or ``--driver-java-options``).
    """
    conf = {"spark.sql.cli.print.header": "true"}
    if not _own_log_config(args):
        java_options = embedded_conf(home)["spark.driver.extraJavaOptions"]
        conf["spark.driver.extraJavaOptions"] = f"{java_options} -Dlog4j2.configurationFile={CLI_LOG_CONFIG.as_uri()}"
    return plugin_submit_command(home, SPARK_SQL_CLASS, args, conf)


def _own_log_config(args: list[str]) -> bool:
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir and any((Path(conf_dir) / name).is_file() for name in ("log4j2.properties", "log4j2.xml")):
        return True
    return any(a.startswith("--driver-java-options") or "extraJavaOptions" in a for a in args)


def plugin_submit_command(home: Path | str, main_class: str, args: list[str],
                          conf: dict[str, str] | None = None) -> list[str]:
    """argv running ``bin/spark-submit --class main_class`` on the embedded ``home`` with the plugin.

    The one launcher of the SQL-only JVMs (spark-sql, the Thrift and Connect
    servers): spark-submit knows their main classes, supplies their primary
    resource (``spark-internal``) and passes arguments it does not know on to
    them, so ``args`` may mix spark-submit options with the program's own.
    The environment rides in the argv (``env``) so the JVM-launched worker runs
    this very Python and finds this very ``pyspark_incr``. ``conf`` adds to (or replaces) the
    embedded settings.
    """
    Path(home).mkdir(parents=True, exist_ok=True)
    spark_home = Path(pyspark.__file__).resolve().parent
    _ensure_executable(spark_home / "bin")
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    pythonpath = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    env = {"SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": pythonpath}
    conf = {
        **embedded_conf(home),
        "spark.sql.extensions": EXTENSIONS_CLASS,
        CATALOG_CONF: CATALOG_CLASS,
        PYTHON_CONF: sys.executable,
        **(conf or {}),
    }
    argv = ["env", *(f"{k}={v}" for k, v in env.items()), "bash", str(spark_home / "bin" / "spark-submit")]
    # --class first: only then does spark-submit hand the options it does not know to the program.
    argv += ["--class", main_class, "--driver-class-path", str(shim_jar())]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return argv + list(args)


def _ensure_executable(bin_dir: Path) -> None:
    """Some installers drop the exec bit from pyspark's scripts, which call each other directly."""
    for script in ("spark-sql", "spark-submit", "spark-class", "find-spark-home", "load-spark-env.sh"):
        path = bin_dir / script
        try:
            mode = path.stat().st_mode
            if not mode & stat.S_IXUSR:
                path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError:
            pass
