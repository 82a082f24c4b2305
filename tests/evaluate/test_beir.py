"""BEIR loader: the real SciFact folder, then tiny folders written to tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragline.core.errors import ConfigError, NotFoundError
from ragline.evaluate.beir import (
    BeirDoc,
    BeirFormatError,
    available_splits,
    fingerprint,
    iter_corpus,
    load_beir,
)

SCIFACT = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "scifact").resolve()

CORPUS = [
    {"_id": "d1", "title": "Alpha", "text": "alpha text", "metadata": {"year": 2001}},
    {"_id": "d2", "title": "", "text": "beta text"},
    {"_id": "d3", "text": "gamma text"},  # no title, no metadata
]
QUERIES = [
    {"_id": "q1", "text": "what is alpha"},
    {"_id": "q2", "text": "what is beta", "metadata": {}},
    {"_id": "q3", "text": "only in train"},
]
TEST_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td2\t1\n"
TRAIN_QRELS = "query-id\tcorpus-id\tscore\nq3\td3\t1\n"


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def write_beir(
    root: Path,
    *,
    corpus: str | None = None,
    queries: str | None = None,
    qrels: dict[str, str] | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(_jsonl(CORPUS) if corpus is None else corpus)
    (root / "queries.jsonl").write_text(_jsonl(QUERIES) if queries is None else queries)
    (root / "qrels").mkdir(exist_ok=True)
    for split, text in (qrels or {"test": TEST_QRELS, "train": TRAIN_QRELS}).items():
        (root / "qrels" / f"{split}.tsv").write_text(text)
    return root


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny")


# ------------------------------------------------------------------- SciFact
@pytest.mark.skipif(
    not (SCIFACT / "corpus.jsonl").is_file(), reason=f"SciFact BEIR data not found at {SCIFACT}"
)
def test_scifact_counts() -> None:
    ds = load_beir(SCIFACT)
    assert (ds.name, ds.split) == ("scifact", "test")
    assert len(ds.corpus) == 5183
    assert len(ds.queries) == 300
    assert sum(len(r) for r in ds.qrels.values()) == 339
    assert set(ds.queries) == set(ds.qrels)
    assert all(doc in ds.corpus for rels in ds.qrels.values() for doc in rels)
    assert sum(1 for _ in iter_corpus(SCIFACT)) == 5183
    assert "test" in available_splits(SCIFACT) and "train" in available_splits(SCIFACT)
    train = load_beir(SCIFACT, split="train")
    assert len(train.queries) == len(train.qrels) > 0
    fp = fingerprint(SCIFACT)
    assert len(fp) == 16 and fp == fingerprint(SCIFACT / "corpus.jsonl")


# --------------------------------------------------------------- tiny folder
def test_load_tiny(tiny: Path) -> None:
    ds = load_beir(tiny)
    assert ds.name == "tiny" and ds.split == "test"
    assert list(ds.corpus) == ["d1", "d2", "d3"]
    assert ds.corpus["d1"] == BeirDoc("d1", "Alpha", "alpha text", {"year": 2001})
    assert ds.corpus["d3"].title == "" and ds.corpus["d3"].metadata == {}
    assert ds.corpus["d1"].full_text == "Alpha alpha text"
    assert ds.corpus["d2"].full_text == "beta text"
    assert ds.queries == {"q1": "what is alpha", "q2": "what is beta"}  # q3 is train only
    assert ds.qrels == {"q1": {"d1": 2, "d3": 0}, "q2": {"d2": 1}}
    train = load_beir(str(tiny), split="train")
    assert train.queries == {"q3": "only in train"} and train.split == "train"


def test_dataset_is_frozen(tiny: Path) -> None:
    ds = load_beir(tiny)
    with pytest.raises(AttributeError):
        ds.split = "dev"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ds.corpus["d1"].text = "x"  # type: ignore[misc]


def test_iter_corpus_streams_folder_or_file(tiny: Path) -> None:
    it = iter_corpus(tiny)
    assert next(it).doc_id == "d1"
    assert [d.doc_id for d in iter_corpus(tiny / "corpus.jsonl")] == ["d1", "d2", "d3"]


def test_blank_lines_crlf_and_int_ids_are_accepted(tmp_path: Path) -> None:
    root = write_beir(
        tmp_path / "ds",
        corpus='{"_id": 7, "text": "seven"}\n\n{"_id": "d1", "text": "one"}\n\n',
        queries='\n{"_id": "q1", "text": "q"}\n',
        qrels={"test": "query-id\tcorpus-id\tscore\r\nq1\t7\t1\r\nq1\t7\t1\r\n\r\n"},
    )
    ds = load_beir(root)
    assert list(ds.corpus) == ["7", "d1"]
    assert ds.qrels == {"q1": {"7": 1}}


# ----------------------------------------------------------------- not found
def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        load_beir(tmp_path / "nope")
    with pytest.raises(NotFoundError, match="does not exist"):
        iter_corpus(tmp_path / "nope")  # fails at the call, not on first next()
    with pytest.raises(NotFoundError):
        fingerprint(tmp_path / "nope")


def test_path_is_a_file(tiny: Path) -> None:
    with pytest.raises(NotFoundError, match="not a folder"):
        load_beir(tiny / "queries.jsonl")


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_file(tiny: Path, name: str) -> None:
    (tiny / name).unlink()
    with pytest.raises(NotFoundError, match=name):
        load_beir(tiny)


def test_missing_split_lists_available(tiny: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        load_beir(tiny, split="dev")
    msg = str(err.value)
    assert "'dev'" in msg and "'test'" in msg and "'train'" in msg


def test_missing_qrels_folder(tiny: Path) -> None:
    for f in (tiny / "qrels").iterdir():
        f.unlink()
    (tiny / "qrels").rmdir()
    with pytest.raises(NotFoundError, match="available splits.*none"):
        load_beir(tiny)
    assert available_splits(tiny) == []


# ----------------------------------------------------------------- malformed
@pytest.mark.parametrize(
    ("corpus", "line", "reason"),
    [
        ('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n', 2, "invalid JSON"),
        ('{"_id": "d1", "text": "a"}\n\n["d2", "b"]\n', 3, "JSON object"),
        ('{"text": "no id"}\n', 1, '"_id"'),
        ('{"_id": "", "text": "empty id"}\n', 1, '"_id"'),
        ('{"_id": null, "text": "null id"}\n', 1, '"_id"'),
        ('{"_id": "d1", "text": 5}\n', 1, '"text" must be a string'),
        ('{"_id": "d1", "title": ["x"], "text": "a"}\n', 1, '"title" must be a string'),
        ('{"_id": "d1", "text": "a", "metadata": "x"}\n', 1, '"metadata"'),
        (
            '{"_id": "d1", "text": "a"}\n{"_id": "d2"}\n\n{"_id": "d1", "text": "b"}\n',
            4,
            "duplicate doc id 'd1' .*line 1",
        ),
    ],
)
def test_malformed_corpus(tmp_path: Path, corpus: str, line: int, reason: str) -> None:
    root = write_beir(
        tmp_path / "ds", corpus=corpus, qrels={"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\n"}
    )
    with pytest.raises(BeirFormatError, match=reason) as err:
        load_beir(root)
    assert err.value.line == line
    assert err.value.path == root / "corpus.jsonl"
    assert f"corpus.jsonl:{line}:" in str(err.value)
    assert isinstance(err.value, ConfigError)


@pytest.mark.parametrize(
    ("queries", "line", "reason"),
    [
        ('{"_id": "q1", "text": "a"}\nnot json\n', 2, "invalid JSON"),
        ('{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "again"}\n', 2, "duplicate query"),
        ('{"_id": ["q1"], "text": "a"}\n', 1, '"_id"'),
    ],
)
def test_malformed_queries(tmp_path: Path, queries: str, line: int, reason: str) -> None:
    root = write_beir(
        tmp_path / "ds", queries=queries, qrels={"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\n"}
    )
    with pytest.raises(BeirFormatError, match=reason) as err:
        load_beir(root)
    assert err.value.line == line and err.value.path.name == "queries.jsonl"


@pytest.mark.parametrize(
    ("qrels", "line", "reason"),
    [
        ("q1\td1\t1\n", 1, "header"),
        ("", 1, "header"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\n", 3, "3 tab-separated columns"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\tx\n", 2, "got 4"),
        ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", 2, "score must be an integer"),
        ("query-id\tcorpus-id\tscore\nq1\t\t1\n", 2, "empty"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", 3, "different scores"),
    ],
)
def test_malformed_qrels(tmp_path: Path, qrels: str, line: int, reason: str) -> None:
    root = write_beir(tmp_path / "ds", qrels={"test": qrels})
    with pytest.raises(BeirFormatError, match=reason) as err:
        load_beir(root)
    assert err.value.line == line
    assert f"test.tsv:{line}:" in str(err.value)


def test_judged_query_missing_from_queries(tmp_path: Path) -> None:
    root = write_beir(
        tmp_path / "ds", qrels={"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n"}
    )
    with pytest.raises(ConfigError, match=r"1 queries judged.*'q9'"):
        load_beir(root)


# --------------------------------------------------------------- fingerprint
def test_fingerprint_stable_and_content_sensitive(tiny: Path) -> None:
    fp = fingerprint(tiny)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == fingerprint(tiny) == fingerprint(tiny / "corpus.jsonl")
    corpus = tiny / "corpus.jsonl"
    st = corpus.stat()
    data = corpus.read_bytes()
    corpus.write_bytes(data.replace(b"alpha", b"alphA"))  # same size
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert fingerprint(tiny) != fp
    corpus.write_bytes(data)
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fingerprint(tiny) == fp
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert fingerprint(tiny) != fp  # mtime is part of it


def test_fingerprint_large_file_reads_both_ends(tmp_path: Path) -> None:
    big = tmp_path / "big"
    rows = [{"_id": f"d{i}", "text": "x" * 200} for i in range(2000)]  # ~430 KB
    write_beir(big, corpus=_jsonl(rows))
    corpus = big / "corpus.jsonl"
    st = corpus.stat()
    fp = fingerprint(big)
    data = bytearray(corpus.read_bytes())
    pinned = (st.st_atime_ns, st.st_mtime_ns)

    data[-10] = ord("y")  # last block
    corpus.write_bytes(bytes(data))
    os.utime(corpus, ns=pinned)
    assert fingerprint(big) != fp

    data[-10] = ord("x")
    data[len(data) // 2] = ord("y")  # middle: by design not read
    corpus.write_bytes(bytes(data))
    os.utime(corpus, ns=pinned)
    assert fingerprint(big) == fp
