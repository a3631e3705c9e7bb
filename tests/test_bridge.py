"""The JVM shim and the Python bridge, seen from SQL: in-process (PySpark) and through the
worker a SQL-only JVM (spark-sql) launches."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pyspark
import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException

from pyspark_incr.bridge import jar as jarmod
from pyspark_incr.bridge.session import register_handler, spark_sql_command
from pyspark_incr.errors import ArgumentError, BridgeError
from pyspark_incr.procedures import REGISTRY, Column, Param, procedure

ECHO = "bridge_test_echo"
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process checks read /proc")


@pytest.fixture
def echo(spark):
    """A test-only procedure covering every parameter/column type; yields the args it saw."""
    seen: list[dict] = []

    @procedure(
        ECHO,
        "Echoes its arguments (bridge tests only).",
        params=(
            Param("s", "string", "A required string.", required=True),
            Param("n", "int", "An int.", default=3),
            Param("big", "bigint", "A bigint."),
            Param("ts", "timestamp", "A timestamp."),
            Param("flag", "boolean", "A flag.", default=False),
            Param("x", "double", "A double.", default=1.5),
        ),
        output=(
            Column("s", "string", ""),
            Column("n", "int", ""),
            Column("big", "bigint", ""),
            Column("ts", "timestamp", ""),
            Column("flag", "boolean", ""),
            Column("x", "double", ""),
            Column("seven", "bigint", "Counted by SQL run inside the procedure."),
        ),
    )
    def _echo(session, s, n, big, ts, flag, x):
        seen.append(dict(s=s, n=n, big=big, ts=ts, flag=flag, x=x, session=session))
        if s == "user-error":
            raise ArgumentError("incr.bridge_test_echo: s can't be 'user-error' \\ (a user mistake)")
        if s == "bug":
            raise ZeroDivisionError("division by zero")
        seven = session.sql("SELECT count(*) AS c FROM range(7)").first().c
        session.range(3).createOrReplaceTempView("bridge_test_view")
        return [(s, n, big, ts, flag, x, seven)]

    register_handler(spark)  # the shim caches the registry per handler: publish the new one
    yield seen
    del REGISTRY[ECHO]
    register_handler(spark)


def test_call_with_positional_args_uses_declared_defaults(spark, echo):
    row = spark.sql(f"CALL incr.{ECHO}('hi')").first()
    assert row.asDict() == dict(s="hi", n=3, big=None, ts=None, flag=False, x=1.5, seven=7)
    assert echo[-1]["n"] == 3 and echo[-1]["big"] is None


def test_call_with_named_args_returns_typed_rows(spark, echo):
    df = spark.sql(
        f"CALL incr.{ECHO}(flag => true, s => 'it''s', big => 9000000000, "
        "ts => TIMESTAMP'2024-01-02 03:04:05.000006Z', x => 2.25)"
    )
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("s", "string"), ("n", "int"), ("big", "bigint"), ("ts", "timestamp"),
        ("flag", "boolean"), ("x", "double"), ("seven", "bigint"),
    ]
    row = df.first()
    expected_ts = spark.sql("SELECT TIMESTAMP'2024-01-02 03:04:05.000006Z' AS t").first().t
    assert row.asDict() == dict(s="it's", n=3, big=9000000000, ts=expected_ts, flag=True, x=2.25, seven=7)
    assert echo[-1]["ts"] == datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc)


def test_a_call_binds_only_the_arguments_it_passes_and_python_fills_in_the_rest(spark, echo):
    # Spark analyses the default of every parameter it binds, on every call: incr.run's twelve made a
    # no-op run spend more time there than in the procedure.
    df = spark.sql(f"CALL incr.{ECHO}(X => 2.5, s => 'a')")
    assert df.first().asDict() == dict(s="a", n=3, big=None, ts=None, flag=False, x=2.5, seven=7)
    call = df._jdf.queryExecution().analyzed().toString()
    assert f"Call incr.{ECHO}(a, cast(2.5 as double))\n" in call, call  # two arguments, no defaults
    row = spark.sql(f"CALL incr.{ECHO}('b', 4, flag => true)").first()
    assert (row.s, row.n, row.big, row.flag, row.x) == ("b", 4, None, True, 1.5)


def test_an_argument_the_call_passes_is_bound_without_its_default(spark, echo):
    # Spark analyses a bound parameter's default even when the call passes a value for it: about a
    # millisecond an argument, on every call (a scheduled run passes two or three).
    jvm, types = spark._jvm, spark._jvm.org.apache.spark.sql.types
    procedures = jvm.org.apache.spark.sql.connector.catalog.procedures
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog("incr")
    namespace = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 0)
    unbound = catalog.loadProcedure(jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, ECHO))
    by_name = types.MetadataBuilder().putBoolean(procedures.ProcedureParameter.BY_NAME_METADATA_KEY, True).build()
    passed = types.StructType().add(types.StructField("x", types.DataTypes.DoubleType, True, by_name)) \
        .add(types.StructField("s", types.DataTypes.StringType, True, by_name))

    bound = {p.name(): p.defaultValue() for p in unbound.bind(passed).parameters()}
    declared = {p.name(): p.defaultValue() for p in unbound.parameters()}

    assert bound == {"s": None, "x": None}
    assert declared["x"] is not None and declared["n"] is not None and declared["s"] is None  # DESCRIBE's view


@pytest.mark.parametrize("args, condition", [
    ("'a', s => 'b'", "DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT"),
    ("s => 'a', S => 'b'", "DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT"),
    ("s => 'a', 4", "UNEXPECTED_POSITIONAL_ARGUMENT"),
    ("'a', 1, 2, NULL, false, 1.0, 'too many'", "WRONG_NUM_ARGS"),
])
def test_a_call_spark_refuses_gets_sparks_own_error(spark, echo, args, condition):
    with pytest.raises(AnalysisException, match=condition):
        spark.sql(f"CALL incr.{ECHO}({args})").collect()
    assert not echo


def test_procedure_sql_runs_in_the_calling_session(spark, echo):
    other = spark.newSession()
    other.sql(f"CALL incr.{ECHO}('from another session')").collect()
    assert echo[-1]["session"]._jsparkSession.sessionUUID() == other._jsparkSession.sessionUUID()
    assert other.sql("SELECT count(*) AS c FROM bridge_test_view").first().c == 3
    spark.catalog.dropTempView("bridge_test_view")
    other.catalog.dropTempView("bridge_test_view")


def test_show_procedures_lists_the_registry(spark, echo):
    names = {r.procedure_name for r in spark.sql("SHOW PROCEDURES IN incr").collect()}
    assert ECHO in names and "version" in names
    assert set(REGISTRY) <= names


def test_describe_procedure_shows_parameters_and_description(spark, echo):
    text = "\n".join(r[0] for r in spark.sql(f"DESCRIBE PROCEDURE incr.{ECHO}").collect())
    assert "Echoes its arguments (bridge tests only)." in text
    assert "IN s" in text and "STRING" in text and "A required string." in text
    assert "DEFAULT 3" in text and "DEFAULT false" in text


def test_unknown_procedure_error_names_it(spark):
    with pytest.raises(AnalysisException, match="ROUTINE_NOT_FOUND") as e:
        spark.sql("CALL incr.no_such_procedure()").collect()
    assert "`incr`.`no_such_procedure`" in str(e.value)


def test_unknown_argument_is_a_clear_error(spark, echo):
    with pytest.raises(AnalysisException, match="UNRECOGNIZED_PARAMETER_NAME") as e:
        spark.sql(f"CALL incr.{ECHO}(s => 'a', nope => 1)").collect()
    assert "`nope`" in str(e.value)


def test_missing_required_argument_is_a_clear_error(spark, echo):
    with pytest.raises(AnalysisException, match="REQUIRED_PARAMETER_NOT_FOUND") as e:
        spark.sql(f"CALL incr.{ECHO}(n => 1)").collect()
    assert "`s`" in str(e.value)


def test_incr_error_surfaces_with_its_exact_message_class_and_sqlstate(spark, echo):
    with pytest.raises(IllegalArgumentException) as e:
        spark.sql(f"CALL incr.{ECHO}('user-error')").collect()
    assert str(e.value) == ("[INCR_INVALID_ARGUMENT] incr.bridge_test_echo: s can't be 'user-error' \\ "
                            "(a user mistake) SQLSTATE: 22023")
    assert (e.value.getCondition(), e.value.getSqlState()) == ("INCR_INVALID_ARGUMENT", "22023")


def test_an_error_shows_its_python_trace_when_traces_are_asked_for(spark, echo):
    spark.conf.set("spark.incr.errors.stackTrace", "true")
    try:
        with pytest.raises(IllegalArgumentException) as e:
            spark.sql(f"CALL incr.{ECHO}('user-error')").collect()
    finally:
        spark.conf.unset("spark.incr.errors.stackTrace")
    first, _, trace = str(e.value).partition("\n")
    assert first.endswith("(a user mistake) SQLSTATE: 22023")
    assert "Python traceback of incr.bridge_test_echo:" in trace and "raise ArgumentError(" in trace


def test_unexpected_python_exception_is_an_internal_error_with_its_trace(spark, echo):
    with pytest.raises(IllegalArgumentException) as e:
        spark.sql(f"CALL incr.{ECHO}('bug')").collect()
    first, _, trace = str(e.value).partition("\n")
    assert first == (f"[INCR_INTERNAL_ERROR] incr.{ECHO} failed on a bug in pyspark-incr (ZeroDivisionError: "
                     "division by zero); please report it with the trace below. SQLSTATE: XX000")
    assert 'raise ZeroDivisionError("division by zero")' in trace
    assert e.value.getCondition() == "INCR_INTERNAL_ERROR"


@needs_proc
def test_pyspark_calls_are_served_in_process(spark):
    assert spark._jvm.pysparkincr.Bridge.hasInProcessHandler()
    assert spark.sql("CALL incr.version()").first().python.startswith(sys.executable)
    assert _workers_under(os.getpid()) == []  # the driver's JVM never started one


_SUBMIT = "org.apache.spark.deploy.SparkSubmit --conf spark.incr.python=/opt/incr/bin/python "
_CLI = _SUBMIT + "--class org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver spark-internal "
_RUN_SQL = "CALL incr.run(execution_time => '${execution_time}');\n"


@pytest.mark.parametrize("command, script, setting, early", [
    (_SUBMIT + "--class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 spark-internal", None, None, True),
    (_SUBMIT + "--class org.apache.spark.sql.connect.service.SparkConnectServer spark-internal", None, " Auto", True),
    (_CLI + "--hivevar day=2024-01-10", None, None, True),  # interactive
    (_CLI + "-e SELECT 1; CALL incr.status()", None, None, True),
    (_CLI + "-e call `incr`.run()", None, None, True),
    (_CLI + "-e MODEL (name shop.orders, kind FULL); SELECT 1 AS id", None, None, True),
    (_CLI + "-e SELECT 1", None, None, False),
    (_CLI + "-f {script} --hivevar execution_time=2024-01-10", _RUN_SQL, None, True),
    (_CLI + "-f {script}", "INSERT INTO t SELECT 1;\n", None, False),
    (_CLI + "-f /nowhere/run.sql", None, None, False),
    (_CLI + "-e SELECT 1", None, "true", True),
    (_CLI + "-e CALL incr.run()", None, "FALSE", False),
    (_CLI + "-e SELECT 1", None, "sometimes", False),  # a value that is neither: auto
    (_SUBMIT + "pyspark-shell", None, None, False),
    (_SUBMIT + "jobs/run_job.py --execution-time 2024-01-10", None, None, False),
    (_SUBMIT + "pyspark-shell", None, "true", True),
    (None, None, None, False),
])
def test_a_jvm_starts_its_worker_with_its_session_only_where_a_call_is_expected(
        spark, tmp_path, command, script, setting, early):
    # spark.incr.worker.eager: true/false win; auto reads the JVM's command (and a -f script): a server, an
    # interactive spark-sql, or SQL calling incr.*; not a PySpark driver, nor a job that never calls
    if script is not None:
        (tmp_path / "run.sql").write_text(script)
        command = command.format(script=tmp_path / "run.sql")
    assert spark._jvm.pysparkincr.EagerWorker.wanted(command, setting) is early


@pytest.fixture
def captured_definitions(spark):
    """Swap in a create_model that only records its definition (the real one builds models)."""
    seen: list[str] = []
    original = REGISTRY.get("create_model")

    @procedure("create_model", "test stand-in", params=(Param("definition", "string", "", required=True),),
               output=(Column("definition", "string", ""),))
    def _create_model(session, definition):
        seen.append(definition)
        return [(definition,)]

    register_handler(spark)
    yield seen
    if original is None:
        del REGISTRY["create_model"]
    else:
        REGISTRY["create_model"] = original
    register_handler(spark)


def test_model_statement_becomes_create_model_call(spark, captured_definitions):
    definition = textwrap.dedent(
        r"""
        MODEL (name db.m, kind FULL, description 'it''s \n "quoted" \\ here');
        SELECT 'a\'b' AS q, '\\' AS backslash
        """
    ).strip()
    assert spark.sql("  -- a comment first\n" + definition + "\n").first().definition == definition
    assert captured_definitions == [definition]
    spark.sql("create model(name db.n, kind VIEW); SELECT 1").collect()
    assert captured_definitions[-1] == "model(name db.n, kind VIEW); SELECT 1"


def test_statements_merely_mentioning_model_pass_through(spark, captured_definitions):
    assert spark.sql("SELECT 1 AS model").first().model == 1
    assert spark.sql("SELECT 'MODEL (x)' AS modelling").first().modelling == "MODEL (x)"
    assert captured_definitions == []


def test_extensions_declare_the_catalog_without_conf(spark):
    fresh = spark.newSession()
    fresh.conf.unset("spark.sql.catalog.incr")
    assert fresh.sql("CALL incr.version()").first().version == "0.1.0"


class _Builder:
    """A session builder whose getOrCreate stands for the seconds a new JVM takes to start."""

    def __init__(self, starting):
        self._options, self.starting = {}, starting

    def config(self, key, value):
        self._options[key] = value
        return self

    def getOrCreate(self):
        return self.starting()


def test_the_procedures_are_imported_while_a_new_session_starts(monkeypatch):
    import pyspark_incr.bridge.handler as handler
    from pyspark_incr.bridge.session import configure_spark_with_incr

    jvm_starting, loaded = threading.Event(), []

    def load_procedures():
        assert jvm_starting.wait(10), "the imports waited for the session instead of running beside it"
        loaded.append(threading.current_thread().name)

    monkeypatch.setattr(handler, "load_procedures", load_procedures)
    session = object()  # no JVM of its own: returned as it is, not attached

    def starting():
        jvm_starting.set()
        return session

    assert configure_spark_with_incr(_Builder(starting)).getOrCreate() is session
    assert loaded == ["pyspark-incr-imports"]  # done before getOrCreate returned


def test_an_import_failing_beside_the_session_start_is_left_to_the_caller(monkeypatch, capsys):
    import pyspark_incr.bridge.handler as handler
    from pyspark_incr.bridge.session import configure_spark_with_incr

    def load_procedures():
        raise ImportError("no module named broken")

    monkeypatch.setattr(handler, "load_procedures", load_procedures)
    session = object()
    assert configure_spark_with_incr(_Builder(lambda: session)).getOrCreate() is session
    assert "broken" not in capsys.readouterr().err  # register_handler imports again and raises in the caller


_IMPORTED_AFTER_SHARED = """
import importlib, sys
from pyspark.sql import SparkSession
from pyspark_incr.bridge.session import SHARED_IMPORTS
for name in SHARED_IMPORTS:
    importlib.import_module(name)
before = set(sys.modules)
{imports}
print(" ".join(f"{{m}}{{'/' if hasattr(sys.modules[m], '__path__') else ''}}" for m in set(sys.modules) - before))
"""


def _imported_after_shared(imports: str) -> set[str]:
    script = _IMPORTED_AFTER_SHARED.format(imports=imports)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_beside_a_session_start_the_procedures_import_no_package_it_imports_too():
    # Spark's session start imports what pyspark.testing.utils does (py4j's first call with arguments loads it);
    # two threads importing one package's modules can deadlock on Python 3.11, flat modules cannot.
    procedures = _imported_after_shared("from pyspark_incr.bridge.handler import load_procedures; load_procedures()")
    session_start = _imported_after_shared("import pyspark.testing.utils")
    both = procedures & session_start
    assert not [m for m in both if "." in m or m.endswith("/")], (
        f"imported by both: {sorted(both)}; add the package to pyspark_incr.bridge.session.SHARED_IMPORTS")


# --- the jar cache ------------------------------------------------------------------------


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPARK_INCR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jarmod, "_built", {})
    return tmp_path / "cache" / "jars"


def test_jar_is_built_once_and_reused(fresh_cache, monkeypatch):
    first = jarmod.shim_jar()
    assert first.parent == fresh_cache and first.name.startswith("pyspark-incr-shim-")
    assert "pysparkincr/IncrCatalog.class" in zipfile.ZipFile(first).namelist()
    stamp = first.stat().st_mtime_ns
    monkeypatch.setattr(jarmod, "_built", {})  # as a new process would
    monkeypatch.setattr(jarmod, "_build", lambda *a: pytest.fail("rebuilt although sources are unchanged"))
    assert jarmod.shim_jar() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in fresh_cache.iterdir()] == [first.name]  # no temp files left


def test_jar_hash_follows_source_changes(tmp_path):
    src = tmp_path / "src" / "x"
    src.mkdir(parents=True)
    (src / "A.java").write_text("class A {}")
    before = jarmod.source_hash(tmp_path / "src")
    (src / "A.java").write_text("class A { }")
    assert jarmod.source_hash(tmp_path / "src") != before


def test_concurrent_builds_leave_one_valid_jar(fresh_cache):
    target = fresh_cache / "pyspark-incr-shim-concurrent.jar"
    errors: list[BaseException] = []

    def build():
        try:
            jarmod._build(jarmod.checkout_sources(), target)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert zipfile.ZipFile(target).testzip() is None
    assert [p.name for p in fresh_cache.iterdir()] == [target.name]


def test_missing_javac_is_a_clear_error(fresh_cache, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(BridgeError, match="JDK 17"):
        jarmod.shim_jar()


# --- SQL-only clients: spark-sql launches the Python worker ------------------------------------


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) of every process we can see."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        out[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), argv)
    return out


def _tree(root: int, procs: dict[int, tuple[int, list[str]]] | None = None) -> dict[int, list[str]]:
    """``root`` and its descendants: pid -> argv."""
    procs = procs if procs is not None else _processes()
    found = {root} if root in procs else set()
    while True:
        new = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        if not new:
            return {pid: procs[pid][1] for pid in found}
        found |= new


def _workers_under(root: int) -> list[int]:
    """Worker processes below ``root``. A worker's own child caught between fork and exec (croniter's
    import runs ``file`` through platform.architecture) still shows the worker's argv: not a worker."""
    procs = _processes()
    workers = {pid for pid, argv in _tree(root, procs).items() if "pyspark_incr.bridge.worker" in argv}
    return [pid for pid in workers if procs[pid][0] not in workers]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """One ``spark-sql -e`` run on its own home; records the worker pids it had while running."""
    home = tmp_path_factory.mktemp("cli_home")
    argv = spark_sql_command(home, ["-e", "SHOW PROCEDURES IN incr; CALL incr.version(); "
                                          "CREATE TABLE cli_made AS SELECT 42 AS answer"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    while proc.poll() is None:
        seen.update(_workers_under(proc.pid))
        time.sleep(0.1)
    out, err = proc.communicate()
    return dict(home=home, rc=proc.returncode, out=out, err=err, workers=seen)


@needs_proc
def test_spark_sql_cli_calls_procedures_through_the_worker(cli_run):
    assert cli_run["rc"] == 0, cli_run["err"][-3000:]
    rows = [line.split("\t") for line in cli_run["out"].splitlines()]
    assert ["incr", "[]", "NULL", "version"] in rows
    assert ["0.1.0", pyspark.__version__, f"{sys.executable} ({sys.version.split()[0]})"] in rows
    assert len(cli_run["workers"]) == 1


@needs_proc
def test_worker_exits_when_the_cli_exits(cli_run):
    deadline = time.time() + 10
    while any(_alive(pid) for pid in cli_run["workers"]) and time.time() < deadline:
        time.sleep(0.1)
    assert cli_run["workers"] and not any(_alive(pid) for pid in cli_run["workers"])


@needs_proc
def test_another_process_on_the_same_home_sees_the_tables(cli_run):
    assert cli_run["rc"] == 0, cli_run["err"][-3000:]
    script = (
        "import sys\n"
        "from pyspark_incr.bridge.session import embedded_session\n"
        "spark = embedded_session(sys.argv[1])\n"
        "print('ANSWER', spark.table('cli_made').first().answer)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(cli_run["home"])],
                          capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=300)
    assert "ANSWER 42" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("setting, value, error", [
    ("spark.incr.python", "{tmp}/no-such-python",
     "cannot start the Python worker with '{tmp}/no-such-python' (Cannot run program \"{tmp}/no-such-python\": "
     "error=2, No such file or directory); set spark.incr.python to a python that has pyspark-incr installed"),
    ("spark.incr.worker.startTimeout", "2 min",
     "cannot start the Python worker: spark.incr.worker.startTimeout=2 min is not a whole number of seconds; "
     "set it to one (default 120)"),
], ids=["missing-python", "bad-timeout"])
def test_a_worker_that_cannot_start_with_the_session_fails_the_first_call_not_the_session(
        tmp_path, setting, value, error):
    value, error = value.format(tmp=tmp_path), error.format(tmp=tmp_path)
    argv = spark_sql_command(tmp_path / "home", ["--conf", f"{setting}={value}",
                                                 "-e", "SELECT 41 + 1 AS answer; CALL incr.version()"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)

    assert done.returncode != 0
    assert "42" in done.stdout.splitlines(), done.stderr[-3000:]  # the session served the SELECT
    lines = done.stderr.splitlines()
    [early] = [line for line in lines if "did not start with the session (the first CALL starts it again)" in line]
    [refusal] = [line for line in lines if line.startswith("[INCR_BRIDGE_FAILED]")]  # the CALL's, as Spark's own
    assert refusal == f"[INCR_BRIDGE_FAILED] {error} SQLSTATE: 58000"
    assert "FAILED_TO_LOAD_ROUTINE" not in done.stderr


def test_a_call_that_waited_for_a_worker_start_that_timed_out_fails_with_it_and_starts_no_second_python(tmp_path):
    # A "python" that never registers: the start made with the session times out while the CALL waits for it.
    launches = tmp_path / "launches"
    hanging = tmp_path / "hanging-python"
    hanging.write_text(f"#!/bin/sh\necho launched >> {launches}\nexec sleep 300\n")
    hanging.chmod(0o755)
    argv = spark_sql_command(tmp_path / "home", ["--conf", f"spark.incr.python={hanging}",
                                                 "--conf", "spark.incr.worker.startTimeout=15",
                                                 "-e", "CALL incr.version()"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)

    assert done.returncode != 0
    [refusal] = [line for line in done.stderr.splitlines() if line.startswith("[INCR_BRIDGE_FAILED]")]
    assert refusal == (f"[INCR_BRIDGE_FAILED] the Python worker ({hanging} -m pyspark_incr.bridge.worker) did not "
                       "register within 15 s (spark.incr.worker.startTimeout); check that spark.incr.python is a "
                       "python that has pyspark-incr installed (its last output below) SQLSTATE: 58000")
    assert launches.read_text().splitlines() == ["launched"], done.stderr[-3000:]  # one wait of 15 s, not two


class _Cli:
    """An interactive spark-sql fed statement by statement over stdin."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def ask(self, statement: str, expect: str, timeout: float = 180) -> str:
        self.proc.stdin.write(statement + "\n")
        self.proc.stdin.flush()
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if expect in line and statement not in line:
                return line
        raise AssertionError(f"no {expect!r} after {statement!r}")


def _first_worker_under(root: int, timeout: float = 180) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = _workers_under(root)
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no worker started under {root} within {timeout} s")


@needs_proc
def test_the_worker_starts_with_the_cli_serves_its_first_call_is_restarted_when_dead_and_dies_with_the_jvm(tmp_path):
    cli = _Cli(spark_sql_command(tmp_path / "home", []))
    try:
        first = _first_worker_under(cli.proc.pid)  # before any statement: it starts with the session
        version_row = f"\t{pyspark.__version__}\t"
        cli.ask("CALL incr.version();", version_row)
        assert _workers_under(cli.proc.pid) == [first]
        os.kill(first, signal.SIGKILL)
        while _alive(first):
            time.sleep(0.05)
        cli.ask("CALL incr.version();", version_row)
        [second] = _workers_under(cli.proc.pid)
        assert second != first
        [java] = [pid for pid, argv in _tree(cli.proc.pid).items() if argv[0].endswith("java")]
        os.kill(java, signal.SIGKILL)  # no shutdown hook runs: only the stdin pipe tells the worker
        deadline = time.time() + 10
        while _alive(second) and time.time() < deadline:
            time.sleep(0.1)
        assert not _alive(second)
    finally:
        if cli.proc.poll() is None:
            cli.proc.kill()
        cli.proc.wait()


def test_the_py4j_connections_serving_calls_send_replies_without_nagles_delay(spark, echo):
    # py4j never sets TCP_NODELAY: a reply longer than its 8 KB write buffer waited up to 40 ms for the
    # Python side's delayed ACK (a catalog listing of 1,000 tables, a large state listing).
    spark.sql(f"CALL incr.{ECHO}('a')").collect()
    jvm = spark._jvm.pysparkincr

    assert jvm.NoDelay.missing(jvm.Bridge.get()) == 0
    text = "x" * 40_000
    assert spark._jsparkSession.conf().get("pyspark.incr.test.absent", text) == text
