"""A Hive Metastore thrift service, started from the jars pyspark ships, shared by separate Spark applications.

By default Derby runs *inside* the service (embedded Derby admits one process; the service is that
one process), so any number of applications share the catalog through thrift, as they would share a
production metastore. With a ``Postgres`` database it follows docs/operations.md's recipe for a
PostgreSQL-backed metastore word for word: the schema created up front by DataNucleus's SchemaTool
(``create_schema``), then the service started with the recipe's hive-site.xml on its classpath.
"""

from __future__ import annotations

import socket
import subprocess
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import pyspark

from pyspark_incr.bridge.session import embedded_conf

MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL = "org.datanucleus.store.schema.SchemaTool"
JARS = Path(pyspark.__file__).parent / "jars"
#: Where Debian's libpostgresql-jdbc-java puts the driver.
POSTGRES_JAR = Path("/usr/share/java/postgresql.jar")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Postgres:
    """A PostgreSQL database to hold the metastore, and the JDBC driver to reach it."""

    host: str
    port: int
    database: str
    user: str
    password: str
    driver_jar: Path = POSTGRES_JAR

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def jdo(self) -> dict[str, str]:
        """The JDO settings of docs/operations.md's recipe (hive-site.xml and SchemaTool's properties)."""
        return {
            "javax.jdo.option.ConnectionURL": self.url,
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": self.user,
            "javax.jdo.option.ConnectionPassword": self.password,
            # DataNucleus's default factory names columns Hive 2.3's queries do not expect
            "datanucleus.identifierFactory": "datanucleus1",
            # created up front by create_schema: created lazily on PostgreSQL, it deadlocks
            "datanucleus.schema.autoCreateAll": "false",
        }

    def create_schema(self, workdir: Path) -> None:
        """Create the metastore's tables with DataNucleus's SchemaTool and the metastore's own package.jdo."""
        workdir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(next(JARS.glob("hive-metastore-*.jar"))) as jar:
            (workdir / "package.jdo").write_bytes(jar.read("package.jdo"))
        props = workdir / "datanucleus.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.jdo().items()))
        argv = ["java", "-cp", f"{JARS}/*:{self.driver_jar}", SCHEMA_TOOL, "-create", "-api", "JDO",
                "-props", props.name, "package.jdo"]
        done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or "completed successfully" not in done.stdout:
            raise RuntimeError(f"SchemaTool failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def hive_site(settings: dict[str, str]) -> str:
    """A hive-site.xml holding ``settings``."""
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in settings.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def service_settings(warehouse: Path, database: Postgres | None, home: Path | None = None) -> dict[str, str]:
    """The service's hive-site.xml settings: Derby under ``home`` (inside the service), or ``database``."""
    if database is None:
        settings = {"javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
                    "datanucleus.schema.autoCreateAll": "true"}
    else:
        settings = database.jdo()
    return {
        **settings,
        # Hive's main would switch log4j to async loggers, whose disruptor jar pyspark does not ship
        "hive.async.log.enabled": "false",
        "hive.metastore.schema.verification": "false",
        # the default pool, BoneCP, is not among pyspark's jars: without a pool, DROP DATABASE fails
        "datanucleus.connectionPoolingType": "HikariCP",
        "hive.metastore.warehouse.dir": str(warehouse),
    }


@dataclass
class MetastoreService:
    """A running service: its port, directory (conf, Derby, warehouse, log) and process."""

    port: int
    home: Path
    proc: subprocess.Popen

    @classmethod
    def start(cls, home: Path, database: Postgres | None = None, timeout: float = 120) -> "MetastoreService":
        """Start the service on a free port under ``home``; returns once it accepts connections."""
        home = Path(home).resolve()
        conf_dir = home / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        classpath = [conf_dir, f"{JARS}/*", *([database.driver_jar] if database else [])]
        (conf_dir / "hive-site.xml").write_text(hive_site(service_settings(home / "warehouse", database, home)))
        argv = ["java", "-Xmx512m", f"-Dderby.system.home={home}", "-cp", ":".join(map(str, classpath)),
                MAIN, "-p", str(port), "-hiveconf", "hive.async.log.enabled=false"]
        log = open(home / "metastore.log", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        service = cls(port, home, proc)
        service._wait(timeout)
        return service

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the metastore service exited ({self.proc.returncode}); see {self.home}/metastore.log")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the metastore service did not listen within {timeout:g} s; see {self.home}/metastore.log")

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def spark_conf(self, warehouse: Path | None = None) -> dict[str, str]:
        """What an application needs to use the service: the embedded default's settings, the metastore
        swapped for this service, one core, and the shared warehouse."""
        conf = {k: v for k, v in embedded_conf(self.home).items()
                if not k.startswith("spark.hadoop.javax.jdo") and k != "spark.driver.extraJavaOptions"}
        conf.update({
            "spark.master": "local[1]",
            "spark.hadoop.hive.metastore.uris": self.uri,
            "spark.sql.warehouse.dir": str(warehouse or self.home / "warehouse"),
            "spark.driver.memory": "768m",
        })
        return conf

    def stop(self) -> None:
        """Stop the service and wait for its JVM to end."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
