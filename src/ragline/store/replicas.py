"""Read replicas: searches and asks read from streaming standbys of the primary.

``read_database_url`` (``RAGLINE_READ_DATABASE_URL``) names one or more replicas (comma
separated). Queries take them in turn; a replica that cannot be reached is skipped for
:data:`RETRY_AFTER_S` and its share goes to the others, the primary answering when none is
left (a read is as valid there, only not offloaded). Everything that writes — ingest,
deletes, keys, traces, jobs — stays on the primary.

A replica replays the primary's WAL a little behind it, so a document ingested a moment ago
may not be searchable there yet (the read-your-writes gap). :meth:`ReadPools.lag` measures
it per replica (``ragline status`` shows it); ``read_from_primary`` (or
``RAGLINE_READ_FROM_PRIMARY=true``) sends reads to the primary for callers that must see
their own writes at once.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core.errors import StoreError
from .db import Database, _redact

log = logging.getLogger("ragline.store")

RETRY_AFTER_S = 10.0
CONNECT_TIMEOUT_S = 2.0


class ReadPools:
    """What the read path uses in place of a :class:`Database`: the same ``connection()``,
    ``schema`` and ``distributed``, served by replicas (or the primary)."""

    def __init__(self, primary: Database, urls: Sequence[str], *, max_size: int = 4) -> None:
        self.primary = primary
        self.schema = primary.schema
        self.distributed = primary.distributed
        self.urls = list(urls)
        self._pools: list[Any] = []
        self._down_until = [0.0] * len(self.urls)
        self._turn = itertools.count()
        self._lock = threading.Lock()
        from psycopg_pool import ConnectionPool

        for url in self.urls:
            self._pools.append(
                ConnectionPool(
                    url,
                    min_size=0,
                    max_size=max_size,
                    kwargs={"prepare_threshold": None, "autocommit": False},
                    configure=primary._configure,
                    check=ConnectionPool.check_connection,  # a replica restarted: reconnect
                    open=True,
                    timeout=10,
                )
            )

    def __getattr__(self, name: str) -> Any:  # anything else: the primary's
        return getattr(self.primary, name)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection to the next live replica (the primary when none answers)."""
        import psycopg

        for i in self._order():
            pool = self._pools[i]
            try:
                conn = pool.getconn(timeout=CONNECT_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - unreachable: try the next one
                log.warning("replica %s unreachable: %s", _redact(self.urls[i]), exc)
                self._down_until[i] = time.monotonic() + RETRY_AFTER_S
                continue
            try:
                with conn:  # commit on success, roll back on error (pooled: not closed)
                    yield conn
            except psycopg.OperationalError:
                self._down_until[i] = time.monotonic() + RETRY_AFTER_S
                raise
            finally:
                pool.putconn(conn)
            return
        with self.primary.connection() as conn:
            yield conn

    def _order(self) -> list[int]:
        n = len(self._pools)
        if n == 0:
            return []
        with self._lock:
            start = next(self._turn) % n
        now = time.monotonic()
        return [i for i in ((start + k) % n for k in range(n)) if self._down_until[i] <= now]

    def lag(self) -> list[dict[str, Any]]:
        """Per replica: how far behind the primary it is (bytes of WAL not yet replayed,
        and seconds since the last replayed transaction when the primary has written
        since), or the error that kept it from answering."""
        with self.primary.connection() as conn:
            primary_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        out = []
        for url, pool in zip(self.urls, self._pools, strict=True):
            entry: dict[str, Any] = {"url": _redact(url)}
            try:
                with pool.connection(timeout=5) as conn:
                    standby, replayed, behind, seconds = conn.execute(
                        "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, "
                        "pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()), "
                        "CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() "
                        "AND pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()) <= 0 THEN 0 "
                        "ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END",
                        (primary_lsn, primary_lsn),
                    ).fetchone()
                entry.update(
                    standby=bool(standby),
                    replayed_lsn=replayed,
                    lag_bytes=max(int(behind or 0), 0),
                    lag_seconds=round(max(float(seconds or 0.0), 0.0), 3),
                )
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                entry["error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            out.append(entry)
        return out

    def wait_until_caught_up(self, timeout: float = 30.0) -> None:
        """Block until every replica has replayed what the primary has written so far."""
        deadline = time.monotonic() + timeout
        while True:
            lags = self.lag()
            if all(e.get("lag_bytes", 1) == 0 for e in lags):
                return
            if time.monotonic() > deadline:
                raise StoreError(f"replicas still behind the primary after {timeout:.0f} s: {lags}")
            time.sleep(0.05)

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
