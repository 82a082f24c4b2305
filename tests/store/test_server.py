"""The embedded server's own settings: sized to the machine, applied once, kept after."""

from __future__ import annotations

import shutil

import psycopg
import pytest

from ragline.store.server import (
    SETTINGS_MARKER,
    ensure_server,
    machine_memory_bytes,
    server_settings,
    stop_server,
)
from tests.conftest import fresh_data_dir


def test_settings_follow_the_machine():
    gib = 1 << 30
    disk = 100 * gib
    assert server_settings(24 * gib, disk)["shared_buffers"] == "6144MB"
    assert server_settings(24 * gib, disk)["effective_cache_size"] == "12288MB"
    assert server_settings(256 * gib, disk)["shared_buffers"] == "8192MB"  # capped
    assert server_settings(256 << 20, disk)["shared_buffers"] == "128MB"  # the default at least
    assert server_settings(gib, disk)["wal_recycle"] == "off"
    assert server_settings(gib, disk)["max_wal_size"] == "4096MB"
    assert server_settings(gib, 20 * gib)["max_wal_size"] == "2048MB"  # a tenth of the disk
    assert server_settings(gib, 2 * gib)["max_wal_size"] == "1024MB"  # the default at least


def _show(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return {
            n: conn.execute(f"SHOW {n}").fetchone()[0]
            for n in ("shared_buffers", "effective_cache_size", "wal_recycle", "max_wal_size")
        }


def _mb(value: str) -> int:
    n, unit = int(value[:-2]), value[-2:]
    return n * 1024 if unit == "GB" else n


def test_a_new_server_runs_with_them_and_keeps_a_users_change():
    """The first start applies the settings (restarting once for shared_buffers); a stop
    and start in the same process finds the server again; a later ALTER SYSTEM by the
    user survives restarts (the settings are applied once per data directory)."""
    data = fresh_data_dir()
    try:
        url = ensure_server(data)
        got = _show(url)
        want = server_settings(machine_memory_bytes(), shutil.disk_usage(data).free)
        assert _mb(got["shared_buffers"]) == _mb(want["shared_buffers"])
        assert _mb(got["max_wal_size"]) == _mb(want["max_wal_size"])
        assert _mb(got["effective_cache_size"]) == _mb(want["effective_cache_size"])
        assert got["wal_recycle"] == "off"
        assert (data / SETTINGS_MARKER).exists()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_buffers = '200MB'")
        assert stop_server(data)
        url = ensure_server(data)  # the same process: the wheel's cached handle restarts it
        assert _show(url)["shared_buffers"] == "200MB"
    finally:
        stop_server(data)
        shutil.rmtree(data, ignore_errors=True)


def test_a_running_server_is_not_restarted_under_its_clients():
    """A data directory from before the settings (no marker) whose server runs: it gets the
    settings for its next start, and a client's open connection is not cut."""
    data = fresh_data_dir()
    try:
        url = ensure_server(data)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET shared_buffers")
        stop_server(data)
        url = ensure_server(data)
        (data / SETTINGS_MARKER).unlink()
        with psycopg.connect(url, autocommit=True) as client:
            pid = client.execute("SELECT pg_backend_pid()").fetchone()[0]
            ensure_server(data)
            assert client.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
            assert client.execute("SHOW shared_buffers").fetchone()[0] == "128MB"
        assert (data / SETTINGS_MARKER).exists()
        stop_server(data)
        want = server_settings(machine_memory_bytes(), 0)["shared_buffers"]
        assert _mb(_show(ensure_server(data))["shared_buffers"]) == _mb(want)
    finally:
        stop_server(data)
        shutil.rmtree(data, ignore_errors=True)


def test_a_server_that_cannot_start_with_them_starts_as_before(monkeypatch):
    """Shared memory the machine refuses (here 1,000 GB, more than RAM + swap, which the
    kernel's default overcommit policy refuses at once): the memory settings are dropped
    again and the server starts with PostgreSQL's default."""
    from pathlib import Path

    import ragline.store.server as srv

    try:
        policy = Path("/proc/sys/vm/overcommit_memory").read_text().strip()
    except OSError:
        policy = ""
    if policy != "0":
        pytest.skip("needs the kernel's heuristic overcommit policy to refuse the mapping")
    real = srv.server_settings
    monkeypatch.setattr(
        srv, "server_settings", lambda ram, disk: {**real(ram, disk), "shared_buffers": "1000GB"}
    )
    data = fresh_data_dir()
    try:
        got = _show(ensure_server(data))
        assert got["shared_buffers"] == "128MB"
        assert got["wal_recycle"] == "off"
        assert (data / SETTINGS_MARKER).exists()
    finally:
        stop_server(data)
        shutil.rmtree(data, ignore_errors=True)
