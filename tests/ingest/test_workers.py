"""The parse pool: per-file time and memory limits, crashes contained, order kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.core.errors import ParseError, ParseResourceError, ParseTimeoutError
from ragline.core.types import ParsedDocument
from ragline.ingest.workers import ParsePool

HOSTILE = "tests.ingest.hostile_parsers:parse"


def _files(tmp_path: Path, names: list[str]) -> list[Path]:
    out = []
    for n in names:
        p = tmp_path / n
        p.write_text(f"# {n}\n\nSome text about {n}.\n")
        out.append(p)
    return out


def test_order_kept_and_inline_items(tmp_path):
    files = _files(tmp_path, [f"f{i}.md" for i in range(9)])
    items = [(p.name, p, None) for p in files]
    items.insert(3, ("inline", None, lambda: ParsedDocument("inline", (), "text/plain")))
    with ParsePool(workers=2) as pool:
        out = list(pool.imap(items))
    assert [k for k, _ in out] == [k for k, _, _ in items]
    assert all(isinstance(d, ParsedDocument) for _, d in out)
    assert out[0][1].title == "f0.md"


def test_timeout_memory_and_crash_are_contained(tmp_path):
    files = _files(
        tmp_path, ["ok1.md", "hang.md", "ok2.md", "hog.md", "crash.md", "ok3.md", "empty.md"]
    )
    (tmp_path / "empty.md").write_bytes(b"")
    with ParsePool(workers=2, timeout_s=3, memory_mb=512, parse_fn=HOSTILE) as pool:
        out = dict(pool.imap([(p.name, p, None) for p in files]))
        assert pool.restarts >= 2
    assert isinstance(out["hang.md"], ParseTimeoutError) and "3 s limit" in out["hang.md"].reason
    assert isinstance(out["hog.md"], ParseResourceError) and "512 MB" in out["hog.md"].reason
    assert isinstance(out["crash.md"], ParseResourceError) and "died" in out["crash.md"].reason
    assert isinstance(out["empty.md"], ParseError) and "empty" in out["empty.md"].reason
    for ok in ("ok1.md", "ok2.md", "ok3.md"):
        assert isinstance(out[ok], ParsedDocument)


def test_ingest_survives_hostile_parsers(pg_url, schema, tmp_path):
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    idx = make_index(
        pg_url, schema, embedder=FakeEmbedder(), parse_timeout_s=3, parse_memory_mb=512
    )
    files = _files(tmp_path, ["good.md", "hang.md", "crash.md", "fine.md"])
    ing = idx.ingestion.ingestor(None)
    ing.parse_options["parse_fn"] = HOSTILE
    from ragline.core.types import Principal
    from ragline.ingest.sources import file_source

    report = ing.ingest([file_source(p) for p in files], owner=Principal())
    assert sorted(Path(k).name for k in report.added) == ["fine.md", "good.md"]
    assert {Path(f.source).name: f.error for f in report.failed} == {
        "hang.md": "ParseTimeoutError",
        "crash.md": "ParseResourceError",
    }
    idx.close()


@pytest.mark.parametrize("bad", [-1, 0])
def test_settings_validate_limits(bad):
    from ragline.core.errors import ConfigError
    from ragline.core.settings import Settings

    with pytest.raises(ConfigError):
        Settings.load(parse_timeout_s=bad)
