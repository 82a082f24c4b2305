"""Hostile files: a batch of bombs, external entities, truncated, encrypted, empty, binary,
mislabelled, deeply nested and huge single-line files, mixed with good ones.

Each hostile file must end in a typed error with a specific reason for that file only
(or, when it is odd but legitimate, be indexed within the parse limits); the good files
of the same batch are indexed and searchable; nothing from a rejected file is stored;
the parent process survives without its memory blowing up; and the canary that the
external-entity files point at shows up nowhere: not in search results, chunks,
document metadata, postings, report reasons or CLI output.

The files come from :mod:`tests.ingest.hostile_files` and are written at test time.
The whole batch is ingested once per module, through the real :class:`ragline.Index`
(real PostgreSQL, real parsers in worker processes, fake embedder).
"""

from __future__ import annotations

import os
import re
import resource
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragline.core import errors as E
from ragline.ingest.sources import doc_key_for
from tests.ingest.hostile_files import (
    CASES,
    MB,
    Hostile,
    generate,
    many_paragraphs,
    words,
    write_good,
)

PARSE_TIMEOUT_S = 20
PARSE_MEMORY_MB = 1024
PARENT_MAX_RSS_MB = 1024  # what an ingest may add to the parent's RSS
"""The test process (the parent; parse workers are separate processes) stays below this."""
CHUNK_MAX_TOKENS = 254
"""MiniLM's chunk size (the fake embedder would allow 10,000-token chunks)."""


@dataclass
class Batch:
    folder: Path
    canary: Path
    token: str
    cases: dict[str, Hostile]
    good: dict[str, str]

    def path(self, name: str) -> Path:
        return self.folder / name

    def key(self, name: str) -> str:
        return doc_key_for(self.path(name))


@dataclass
class Ingested:
    batch: Batch
    index: Any
    report: Any
    maxrss_mb: float
    schema: str


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    root = tmp_path_factory.mktemp("hostile")
    token = f"CANARY-{uuid.uuid4().hex}"
    canary = root / "secret" / "canary.txt"
    canary.parent.mkdir()
    canary.write_text(f"{token}\n")
    folder = root / "batch"
    cases = {c.name: c for c in generate(folder, canary, token)}
    good = write_good(folder)
    return Batch(folder, canary, token, cases, good)


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak_rss() -> float | None:
    """Reset this process's peak RSS (Linux: ``5`` into ``/proc/self/clear_refs``) and
    return the RSS it starts from, so that what is measured afterwards is what the ingest
    adds, not what earlier tests of the session left in this process (models, pools)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_mb("VmRSS")
    except OSError:
        return None


def _peak_rss_mb(baseline: float | None) -> float:
    """How far the peak RSS rose above ``baseline`` since :func:`_reset_peak_rss` (VmHWM);
    without the reset, the whole process's peak."""
    if baseline is not None:
        return _status_mb("VmHWM") - baseline
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@pytest.fixture(scope="module")
def ingested(pg_url: str, batch: Batch) -> Iterator[Ingested]:
    import psycopg

    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    schema = f"t_hostile_{uuid.uuid4().hex[:10]}"
    index = make_index(
        pg_url,
        schema,
        embedder=FakeEmbedder(),
        parse_timeout_s=PARSE_TIMEOUT_S,
        parse_memory_mb=PARSE_MEMORY_MB,
        chunk_max_tokens=CHUNK_MAX_TOKENS,
    )
    reset = _reset_peak_rss()
    report = index.ingest(batch.folder)
    maxrss_mb = _peak_rss_mb(reset)
    yield Ingested(batch, index, report, maxrss_mb, schema)
    index.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _case_ids() -> list[Any]:
    return [
        pytest.param(
            c.name,
            id=c.name.split()[0],
            marks=[pytest.mark.xfail(strict=True, reason=c.known_bug)] if c.known_bug else [],
        )
        for c in CASES
    ]


def _known_bugs(batch: Batch) -> set[str]:
    return {n for n, c in batch.cases.items() if c.known_bug}


def test_at_least_25_hostile_files(batch: Batch) -> None:
    failing = [c for c in batch.cases.values() if c.outcome == "failed"]
    assert len(failing) >= 25, f"only {len(failing)} hostile files must fail"
    on_disk = {p.name for p in batch.folder.iterdir()}
    assert on_disk == set(batch.cases) | set(batch.good)


@pytest.mark.parametrize("name", _case_ids())
def test_each_hostile_file_has_its_outcome(ingested: Ingested, name: str) -> None:
    batch, report = ingested.batch, ingested.report
    case = batch.cases.get(name)
    if case is None:
        pytest.skip(f"{name}: its generator is unavailable here (pypdf missing)")
    failed = {Path(f.source).name: f for f in report.failed}
    if case.outcome == "added":
        assert batch.key(name) in report.added, f"{name} ({case.what}): {failed.get(name)}"
        return
    if case.outcome == "skipped":
        skipped = {Path(s.source).name: s for s in report.skipped}
        assert name in skipped and re.search(case.reason, skipped[name].reason, re.I), report
        return
    assert name in failed, f"{name} ({case.what}) did not fail; report: {report.to_dict()}"
    failure = failed[name]
    assert failure.error in case.errors, f"{name}: {failure}"
    error_class = getattr(E, failure.error)
    assert issubclass(error_class, E.ParseError)
    assert re.search(case.reason, failure.reason, re.IGNORECASE), f"{name}: {failure.reason!r}"
    assert "Traceback" not in failure.reason


def test_every_file_accounted_for_once(ingested: Ingested) -> None:
    batch, report = ingested.batch, ingested.report
    failed = [Path(f.source).name for f in report.failed]
    added = [Path(k).name for k in report.added]
    skipped = [Path(s.source).name for s in report.skipped]
    assert sorted(failed + added + skipped) == sorted([*batch.cases, *batch.good])
    assert set(skipped) == {n for n, c in batch.cases.items() if c.outcome == "skipped"}
    assert not report.updated and not report.unchanged
    expected_failed = {n for n, c in batch.cases.items() if c.outcome == "failed"}
    assert set(failed) - _known_bugs(batch) == expected_failed


def test_good_files_indexed_and_searchable(ingested: Ingested) -> None:
    batch, report, index = ingested.batch, ingested.report, ingested.index
    searchable = dict(batch.good)
    searchable.update({n: c.word for n, c in batch.cases.items() if c.word and not c.known_bug})
    for name, word in searchable.items():
        key = batch.key(name)
        assert key in report.added, name
        hits = index.search(word, mode="bm25", k=20)
        assert any(h.doc_key == key for h in hits), f"{name}: no hit for {word!r}"
        # hybrid search (the default) finds it too
        assert any(h.doc_key == key for h in index.search(word, k=20)), name


def test_nothing_from_rejected_files_is_stored(ingested: Ingested) -> None:
    report = ingested.report
    with ingested.index.db.connection() as conn:
        stored = {r[0] for r in conn.execute("SELECT doc_key FROM documents")}
        orphans = conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id "
            "WHERE d.id IS NULL"
        ).fetchone()[0]
        per_doc = dict(
            conn.execute(
                "SELECT d.doc_key, count(c.id) FROM documents d "
                "LEFT JOIN chunks c ON c.document_id = d.id GROUP BY d.doc_key"
            ).fetchall()
        )
    assert stored == set(report.added)
    assert orphans == 0
    assert all(n > 0 for n in per_doc.values()), per_doc
    assert not {Path(k).name for k in stored} & {Path(f.source).name for f in report.failed}


def test_canary_appears_nowhere(ingested: Ingested) -> None:
    batch, report, index = ingested.batch, ingested.report, ingested.index
    token = batch.token
    secret = token.split("-", 1)[1]  # the hex part is one analyzer term
    like = f"%{secret}%"
    with index.db.connection() as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM chunks WHERE text ILIKE %s OR header ILIKE %s),"
            " (SELECT count(*) FROM documents WHERE metadata::text ILIKE %s OR title ILIKE %s),"
            " (SELECT count(*) FROM bm25_terms WHERE term ILIKE %s)",
            (like, like, like, like, like),
        ).fetchone()
    assert counts == (0, 0, 0)
    for mode in ("bm25", "hybrid"):
        hits = index.search(token, mode=mode, k=50)
        assert not [h for h in hits if secret in h.text.lower() or secret in str(h.metadata)]
    assert secret not in str(report.to_dict()).lower()


def test_parent_survives_within_memory(ingested: Ingested) -> None:
    assert ingested.maxrss_mb < PARENT_MAX_RSS_MB, f"parent peak RSS {ingested.maxrss_mb:.0f} MB"
    psutil = pytest.importorskip("psutil")
    workers = [
        p
        for p in psutil.Process().children(recursive=True)
        if "ragline.ingest.workers" in " ".join(p.cmdline())
    ]
    assert not workers, "parse workers outlived the batch"


def _chunk_stats(index: Any, key: str) -> tuple[int, int, int]:
    with index.db.connection() as conn:
        return conn.execute(
            "SELECT count(*), max(length(c.text)), max(c.token_count) FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE d.doc_key = %s",
            (key,),
        ).fetchone()


def test_big_legitimate_files_are_chunked_within_limits(ingested: Ingested) -> None:
    """The 10 MB lines and the million lines are stored as bounded chunks, all of them."""
    batch, index = ingested.batch, ingested.index
    limit = index.chunker.max_tokens
    for name, least in (("long_line.txt", 20), ("long_line.html", 20), ("many_lines.txt", 100)):
        n, longest, most_tokens = _chunk_stats(index, batch.key(name))
        assert n >= least, (name, n)
        assert longest < 20_000, (name, longest)
        assert most_tokens <= limit, (name, most_tokens)
    # text after the 10.5 MB script is there (libxml2 drops it without its huge mode)
    hits = index.search("floccinaucinihilipilification zygomorphic", mode="bm25", k=5)
    assert {h.doc_key for h in hits} == {batch.key("long_line.html")}


@pytest.mark.slow
def test_dense_huge_files_are_indexed(pg_url: str, schema: str, tmp_path: Path) -> None:
    """10 MB of words on one line and a million lines (500k paragraphs) are indexed whole,
    in bounded chunks, without the parent's memory blowing up (about a minute or two)."""
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    (tmp_path / "dense_line.txt").write_bytes(words(10 * MB, 5, "sesquipedalian"))
    (tmp_path / "million_lines.txt").write_bytes(many_paragraphs(1_000_000))
    index = make_index(
        pg_url,
        schema,
        embedder=FakeEmbedder(),
        parse_timeout_s=PARSE_TIMEOUT_S,
        parse_memory_mb=PARSE_MEMORY_MB,
        chunk_max_tokens=CHUNK_MAX_TOKENS,
    )
    reset = _reset_peak_rss()
    try:
        report = index.ingest(tmp_path)
        assert not report.failed, report.failed
        assert len(report.added) == 2
        for name, least in (("dense_line.txt", 5000), ("million_lines.txt", 1000)):
            n, longest, most_tokens = _chunk_stats(index, doc_key_for(tmp_path / name))
            assert n >= least and longest < 20_000, (name, n, longest)
            assert most_tokens <= index.chunker.max_tokens
        hits = index.search("p499999", mode="bm25", k=3)
        assert hits and hits[0].doc_key == doc_key_for(tmp_path / "million_lines.txt")
    finally:
        index.close()
    maxrss_mb = _peak_rss_mb(reset)
    assert maxrss_mb < PARENT_MAX_RSS_MB, f"parent peak RSS {maxrss_mb:.0f} MB"


# --------------------------------------------------------------------------- known bugs


def test_one_huge_word_is_analyzed_in_linear_time() -> None:
    from ragline.analysis import get_analyzer

    analyzer = get_analyzer("english")
    analyzer.terms("a" * 100)
    start = time.perf_counter()
    analyzer.terms("a" * 10_000)
    assert time.perf_counter() - start < 0.5


def _unblock_fifo(fifo: Path, thread: threading.Thread) -> None:
    """Give a reader blocked opening ``fifo`` an end of file: open it for writing, close."""
    while thread.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader yet (ENXIO)
            pass
        thread.join(0.2)


def test_fifo_in_folder_does_not_block_the_batch(pg_url: str, schema: str, tmp_path: Path):
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    write_good(tmp_path)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    index = make_index(pg_url, schema, embedder=FakeEmbedder(), parse_timeout_s=5)
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(report=index.ingest(tmp_path)))
    thread.start()
    thread.join(5)
    blocked = thread.is_alive()
    _unblock_fifo(fifo, thread)
    thread.join()
    index.close()
    assert not blocked, "a FIFO in the folder blocked the batch"
    skipped = {Path(s.source).name: s for s in result["report"].skipped}
    assert "not a regular file" in skipped["pipe.txt"].reason  # listed in the summary, not read
    assert result["report"].added


# --------------------------------------------------------------------------- the CLI


def _cli_ids() -> list[Any]:
    return [pytest.param(c.name, id=c.name.split()[0]) for c in CASES if c.cli]


@pytest.mark.parametrize("name", _cli_ids())
def test_cli_parse(batch: Batch, name: str) -> None:
    """``ragline parse FILE`` (in this process, no worker limits): a typed error on stderr
    and exit code 1, never a traceback; legitimate files print their text."""
    from click.testing import CliRunner

    from ragline.cli.main import cli

    case = batch.cases.get(name)
    if case is None:
        pytest.skip(f"{name}: its generator is unavailable here")
    result = CliRunner().invoke(cli, ["parse", "--", str(batch.path(name))])
    output = result.output
    assert "Traceback" not in output
    assert batch.token.split("-", 1)[1] not in output.lower()
    if case.outcome == "added":
        assert result.exit_code == 0, output
        assert case.word.lower() in output.lower()
        return
    assert result.exit_code == 1, output
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    assert result.stderr.startswith("error: "), result.stderr
    assert re.search(case.reason, result.stderr, re.IGNORECASE), result.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_cli_parse_refuses_fifo_and_device(tmp_path: Path, kind: str) -> None:
    """Reading a FIFO would block forever, /dev/zero would never end."""
    from click.testing import CliRunner

    from ragline.cli.main import cli

    if kind == "fifo":
        path = tmp_path / "pipe.md"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
        if not path.exists():
            pytest.skip("no /dev/zero here")
    result = CliRunner().invoke(cli, ["parse", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and "not a regular file" in result.stderr
    assert "Traceback" not in result.output
