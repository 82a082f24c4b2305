"""A helper process that analyzes chunk texts for BM25 (terms and text hashes).

A bulk load of precomputed vectors is Python work on both sides of the write: the
analysis of the next batch and the COPY of this one. In one process they contend for one
GIL; with the analysis here, they run on two cores. The helper is a fresh interpreter
(``python -m ragline.ingest.analysis_helper``), like the parser workers, so user scripts
need no ``if __name__ == "__main__"`` guard; it speaks length-prefixed pickles over its
stdin/stdout with the process that started it, and nobody else.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from typing import IO, Any

_LEN = struct.Struct("<Q")


def _send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("the analysis helper stopped")
    (n,) = _LEN.unpack(head)
    return pickle.loads(stream.read(n))


def analyze(analyzer: Any, items: Sequence[tuple[str, str]]) -> list[tuple[Counter[str], str]]:
    """(BM25 term counts, text hash) of each (indexed text, language)."""
    from .pipeline import text_hash

    return [(Counter(analyzer.terms(t, lang)), text_hash(t)) for t, lang in items]


class AnalysisHelper:
    """The parent's end: ``helper.analyze(name, items)`` answers as :func:`analyze` does,
    with the analyzer a collection's stored name (``multilingual-v4:english``) means."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragline.ingest.analysis_helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def analyze(self, analyzer_name: str, items: Sequence[tuple[str, str]]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _send(self.proc.stdin, (analyzer_name, list(items)))
        result = _receive(self.proc.stdout)
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _main() -> None:
    from ..analysis.analyzer import MultiAnalyzer

    analyzers: dict[str, Any] = {}
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            name, items = _receive(stdin)
        except EOFError:
            return
        try:
            if name not in analyzers:
                analyzers[name] = MultiAnalyzer.from_name(name)
            _send(stdout, analyze(analyzers[name], items))
        except Exception as exc:  # the parent re-raises it
            _send(stdout, exc)


if __name__ == "__main__":
    _main()
