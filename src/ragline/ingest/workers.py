"""Parse files in worker processes, each file under a time limit and a memory limit.

A hostile or broken file (decompression bomb, pathological nesting, a parser bug that
loops or segfaults) costs at most its own limits and ends in a typed error for that
file only: the worker is killed and replaced, and the batch goes on. Workers start from
a clean interpreter (not a fork of the multi-threaded parent), read the file
themselves and send back the parsed document, so the parent never holds raw bytes of
files it does not need. Workers are fresh interpreters (``python -m
ragline.ingest.workers``), so user scripts need no ``if __name__ == "__main__"`` guard.

Defaults (the settings ``parse_timeout_s`` / ``parse_memory_mb`` / ``parse_workers``,
``RAGLINE_PARSE_…`` in the environment, override them): 120 s and 2,048 MB of address space per file, one worker
per core (at most 4). Results come back in submission order while up to ``window``
files are parsed ahead, so parsing overlaps with embedding in the parent.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core import errors as E
from ..core.types import ParsedDocument

if TYPE_CHECKING:
    from ..parse.files import Boundary

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_PARSE_FN = "ragline.parse:parse_file"

T = TypeVar("T")


def _resolve(fn: str) -> Callable[..., ParsedDocument]:
    module, _, name = fn.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker_main(conn: Connection, memory_mb: int, parse_fn: str) -> None:
    import resource

    limit = memory_mb * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):  # pragma: no cover - platform without RLIMIT_AS
        pass
    parse = _resolve(parse_fn)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        task_id, path, boundary = msg
        try:
            doc = parse(Path(path)) if boundary is None else parse(Path(path), boundary=boundary)
            result: tuple[str, Any] = ("ok", doc)
        except E.ParseError as exc:
            result = ("err", (type(exc).__name__, exc.path, exc.reason))
        except MemoryError:
            result = (
                "err",
                (
                    "ParseResourceError",
                    path,
                    f"parsing needed more than the {memory_mb} MB memory limit per file "
                    "(raise RAGLINE_PARSE_MEMORY_MB if the file is legitimate)",
                ),
            )
        except RecursionError:
            result = ("err", ("ParseError", path, "the document is nested too deeply to parse"))
        except Exception as exc:  # a parser bug: report it for this file only
            result = (
                "err",
                ("ParseError", path, f"unexpected parser error: {type(exc).__name__}: {exc}"),
            )
        try:
            conn.send((task_id, *result))
        except Exception as exc:  # e.g. a result too large or unpicklable
            conn.send(
                (
                    task_id,
                    "err",
                    ("ParseError", path, f"could not return the parsed document: {exc}"),
                )
            )


def _error(kind: str, path: str, reason: str) -> E.ParseError:
    cls = getattr(E, kind, E.ParseError)
    if not (isinstance(cls, type) and issubclass(cls, E.ParseError)):
        cls = E.ParseError
    return cls(path, reason)


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    task: int | None = None
    deadline: float = 0.0


class ParsePool(Generic[T]):
    """A fixed set of parser processes; :meth:`imap` parses in order with look-ahead."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        parse_fn: str = DEFAULT_PARSE_FN,
        boundary: Boundary | None = None,
        pdf_password: str | None = None,
    ) -> None:
        """``boundary``: every file is read only inside it (a folder sync; see
        :mod:`ragline.parse.files`). ``pdf_password`` opens protected PDFs: it reaches the
        parser processes' environment only, never this process's."""
        self.boundary = boundary
        self.pdf_password = pdf_password
        # the settings (RAGLINE_PARSE_WORKERS / _TIMEOUT_S / _MEMORY_MB) pass these in
        self.workers = workers or max(1, min(os.cpu_count() or 1, 4))
        self.timeout_s = timeout_s or DEFAULT_TIMEOUT_S
        self.memory_mb = memory_mb or DEFAULT_MEMORY_MB
        self.parse_fn = parse_fn
        self._pool: list[_Worker] = []
        self.restarts = 0

    def _spawn(self) -> _Worker:
        parent, child = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        if self.pdf_password is not None:
            from ..parse.pdf import PASSWORD_ENV

            env[PASSWORD_ENV] = self.pdf_password
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragline.ingest.workers",
                str(child.fileno()),
                str(self.memory_mb),
                self.parse_fn,
            ],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
        )
        child.close()
        return _Worker(proc, Connection(parent.detach()))

    def _replace(self, w: _Worker) -> _Worker:
        try:
            w.proc.kill()
            w.proc.wait(5)
        except Exception:
            pass
        w.conn.close()
        self.restarts += 1
        nw = self._spawn()
        self._pool[self._pool.index(w)] = nw
        return nw

    def close(self) -> None:
        for w in self._pool:
            try:
                w.conn.send(None)
            except Exception:
                pass
        for w in self._pool:
            try:
                w.proc.wait(2)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait(2)
            w.conn.close()
        self._pool = []

    def __enter__(self) -> ParsePool[T]:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def imap(
        self,
        items: Iterable[tuple[T, Path | None, Callable[[], ParsedDocument] | None]],
        *,
        window: int | None = None,
    ) -> Iterator[tuple[T, ParsedDocument | E.ParseError]]:
        """Parse ``(key, path, inline_loader)`` items, yielding ``(key, document or error)`` in order.

        Items with a ``path`` go to a worker; items with only an ``inline_loader`` (text that
        is not a file) are parsed in this process when their turn comes.
        """
        window = window or 2 * self.workers
        it = iter(items)
        order: deque[int] = deque()
        keys: dict[int, tuple[T, Path | None, Callable[[], ParsedDocument] | None]] = {}
        results: dict[int, ParsedDocument | E.ParseError] = {}
        waiting: deque[int] = deque()
        next_id = 0
        exhausted = False
        while True:
            while not exhausted and len(order) < window:
                try:
                    item = next(it)
                except StopIteration:
                    exhausted = True
                    break
                order.append(next_id)
                keys[next_id] = item
                if item[1] is not None:
                    waiting.append(next_id)
                next_id += 1
            if not order:
                return
            # hand waiting tasks to idle workers
            while waiting:
                idle = next((w for w in self._pool if w.task is None), None)
                if idle is None and len(self._pool) < self.workers:
                    idle = self._spawn()
                    self._pool.append(idle)
                if idle is None:
                    break
                tid = waiting.popleft()
                idle.task, idle.deadline = tid, time.monotonic() + self.timeout_s
                idle.conn.send((tid, str(keys[tid][1]), self.boundary))
            # yield what is ready, in order
            head = order[0]
            key, path, loader = keys[head]
            if path is None:
                try:
                    results[head] = (
                        loader() if loader else E.ParseError(str(key), "nothing to parse")
                    )
                except E.ParseError as exc:
                    results[head] = exc
            if head in results:
                order.popleft()
                del keys[head]
                yield key, results.pop(head)
                continue
            busy = [w for w in self._pool if w.task is not None]
            wait_s = max(0.0, min(w.deadline for w in busy) - time.monotonic()) if busy else None
            ready = wait([w.conn for w in busy], timeout=wait_s)
            now = time.monotonic()
            for w in list(busy):
                assert w.task is not None
                tid = w.task
                if w.conn in ready:
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        code = w.proc.poll()
                        results[tid] = E.ParseResourceError(
                            str(keys[tid][1]),
                            f"the parser process died while reading this file (exit code {code}); "
                            "the file is probably malformed or hostile",
                        )
                        self._replace(w)
                        continue
                    _, status, payload = msg
                    results[tid] = payload if status == "ok" else _error(*payload)
                    w.task = None
                elif now >= w.deadline:
                    results[tid] = E.ParseTimeoutError(
                        str(keys[tid][1]),
                        f"parsing took longer than the {self.timeout_s:g} s limit per file and was stopped "
                        "(raise RAGLINE_PARSE_TIMEOUT_S if the file is legitimate)",
                    )
                    self._replace(w)


if __name__ == "__main__":  # a worker: python -m ragline.ingest.workers FD MEMORY_MB PARSE_FN
    _worker_main(Connection(int(sys.argv[1])), int(sys.argv[2]), sys.argv[3])
