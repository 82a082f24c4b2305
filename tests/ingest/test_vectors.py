"""Ingesting precomputed vectors: what a user with their own embedding pipeline needs, and
the benchmark's write path. Bad records are refused with their line, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragline.ingest.vectors import VectorsError
from ragline.store.bm25 import check
from tests.fakes import FakeEmbedder


def _record(key: str, texts: list[str], emb: FakeEmbedder, **extra):
    return {
        "key": key,
        "title": key.title(),
        "chunks": [{"text": t, "vector": emb._vec(t).tolist()} for t in texts],
        **extra,
    }


def _count(index) -> tuple[int, int]:
    with index.db.connection() as conn:
        return conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
        ).fetchone()


def test_vectors_ingest_search_and_skip_unchanged(fake_index):
    emb = fake_index.embedder
    recs = [
        _record(
            "kb-1", ["The pump needs a new filter every spring.", "Reset with the red button."], emb
        ),
        _record(
            "kb-2", ["Travel refunds are paid within ten days."], emb, metadata={"dept": "finance"}
        ),
    ]
    report = fake_index.ingest_vectors(recs, tenant="acme", groups=["ops"])
    assert report.ok and sorted(report.added) == ["kb-1", "kb-2"] and report.chunks == 3
    assert report.embedded == 0  # nothing was embedded here
    hits = fake_index.search("pump filter", tenant="acme", groups=["ops"], mode="bm25")
    assert hits[0].doc_key == "kb-1"
    vec = fake_index.search("travel refunds", tenant="acme", groups=["ops"], mode="vector")
    assert vec[0].doc_key == "kb-2" and vec[0].metadata["dept"] == "finance"
    assert not fake_index.search("pump filter", tenant="acme", mode="bm25")  # group-only
    again = fake_index.ingest_vectors(recs, tenant="acme", groups=["ops"])
    assert sorted(again.unchanged) == ["kb-1", "kb-2"] and not again.added
    changed = [_record("kb-1", ["The pump needs a new filter every autumn."], emb)]
    upd = fake_index.ingest_vectors(changed, tenant="acme", groups=["ops"])
    assert upd.updated == ["kb-1"]
    assert not fake_index.search("spring", tenant="acme", groups=["ops"], mode="bm25")
    with fake_index.db.connection() as conn:
        assert check(conn, fake_index.collection.id) == []


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            lambda r: r["chunks"][0].update(vector=[0.1] * 3),
            "3 dimensions, the collection's model has 64",
        ),
        (lambda r: r["chunks"][0].update(vector=[float("nan")] * 64), "NaN or infinite"),
        (lambda r: r["chunks"][0].update(vector=[0.0] * 64), "all zeros"),
        (lambda r: r["chunks"][0].update(text="  "), "has no text"),
        (lambda r: r["chunks"][0].pop("vector"), "has no 'vector'"),
        (lambda r: r.update(chunks=[]), "has no 'chunks'"),
        (lambda r: r.update(colour="red"), "unknown field(s) ['colour']"),
        (lambda r: r.pop("key"), "'key'"),
        (lambda r: r.update(modified="yesterday"), "not an ISO date"),
    ],
)
def test_bad_records_name_their_line_and_write_nothing(fake_index, tmp_path, bad, message):
    emb = fake_index.embedder
    recs = [_record(f"d{i}", [f"document number {i} about pumps"], emb) for i in range(5)]
    bad(recs[3])
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    with pytest.raises(VectorsError) as exc:
        fake_index.ingest_vectors_file(path)
    assert f"{path}:4" in str(exc.value) and message in str(exc.value)
    assert "nothing was written" in str(exc.value)
    with pytest.raises(VectorsError):  # a list is validated whole, too
        fake_index.ingest_vectors(recs)
    assert _count(fake_index) == (0, 0)


def test_duplicate_keys_and_bad_json(fake_index, tmp_path):
    emb = fake_index.embedder
    path = tmp_path / "dup.jsonl"
    r = _record("same", ["one text"], emb)
    path.write_text(json.dumps(r) + "\n\n" + json.dumps(r) + "\n")
    with pytest.raises(
        VectorsError, match=r"dup.jsonl:3: key 'same' appears twice \(first at .*dup.jsonl:1\)"
    ):
        fake_index.ingest_vectors_file(path)
    path.write_text(json.dumps(r) + "\n{not json\n")
    with pytest.raises(VectorsError, match=r":2: not valid JSON"):
        fake_index.ingest_vectors_file(path)
    assert _count(fake_index) == (0, 0)


def test_cli_vectors_into_an_empty_collection_builds_the_vector_index(
    pg_url, schema, tmp_path, graph_always
):
    """`ragline ingest --vectors` with the collection's embedder named (a tiny ONNX model
    directory the test writes): the load defers the HNSW index and builds it at the end
    (of any size here: GRAPH_FROM lowered to 0)."""
    from tests.conftest import cli_runner
    from tests.embed.test_onnx_dir import D, tiny_dir

    model, _ = tiny_dir(tmp_path / "tiny")
    run = cli_runner(
        {
            "RAGLINE_DATABASE_URL": pg_url,
            "RAGLINE_DB_SCHEMA": schema,
            "RAGLINE_DATA_DIR": "",
            "RAGLINE_EMBEDDER": f"onnx:{model}",
        }
    )
    rng = np.random.default_rng(0)
    words = "red green blue apple sky grass".split()
    path = tmp_path / "kb.jsonl"
    with path.open("w") as f:
        for i in range(40):
            chunks = [
                {
                    "text": " ".join(rng.choice(words, 6)) + f" item{i}x{j}",
                    "vector": rng.normal(size=D).tolist(),
                }
                for j in range(3)
            ]
            f.write(json.dumps({"key": f"doc-{i}", "chunks": chunks}) + "\n")
    out = json.loads(run("ingest", "--vectors", str(path), "--json").output)
    assert len(out["added"]) == 40 and out["chunks"] == 120 and out["embedded"] == 0
    hits = json.loads(run("search", "item7x1", "--mode", "bm25", "--json").output)
    assert hits["hits"][0]["doc_key"] == "doc-7"
    from ragline.core.settings import Settings
    from ragline.index import Index
    from ragline.store.collections import vector_index_state

    idx = Index(Settings(database_url=pg_url, db_schema=schema, embedder=f"onnx:{model}"))
    assert vector_index_state(idx.db, idx.collection) == "ready"
    idx.close()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": "x", "chunks": [{"text": "t", "vector": [1.0, 2.0]}]}) + "\n")
    res = run("ingest", "--vectors", str(bad), code=1)
    assert f"{bad}:1" in res.output and "2 dimensions" in res.output


def test_ingest_vectors_needs_the_embedder_that_made_them(pg_url, schema):
    from tests.conftest import make_index

    idx = make_index(pg_url, schema)  # embedder "auto", nothing ingested yet
    with pytest.raises(Exception, match="need the embedder that made them"):
        idx.ingest_vectors([{"key": "a", "chunks": [{"text": "x", "vector": [1.0]}]}])
    idx.close()


def test_record_groups_override_the_call_and_regroup_without_rewriting(fake_index):
    emb = fake_index.embedder
    recs = [
        _record("open", ["the lobby opens at nine"], emb),
        _record("secret", ["the lobby code is 4471"], emb, groups=["security"]),
    ]
    fake_index.ingest_vectors(recs, tenant="t")
    assert [h.doc_key for h in fake_index.search("lobby", tenant="t", mode="bm25")] == ["open"]
    both = fake_index.search("lobby", tenant="t", groups=["security"], mode="bm25")
    assert sorted(h.doc_key for h in both) == ["open", "secret"]
    recs[1]["groups"] = ["facilities"]
    again = fake_index.ingest_vectors(recs, tenant="t")
    assert again.updated == ["secret"] and again.unchanged == ["open"]
    assert not [
        h
        for h in fake_index.search("lobby", tenant="t", groups=["security"], mode="bm25")
        if h.doc_key == "secret"
    ]
    assert fake_index.documents(tenant="t")[1].version == 1  # regrouped in place
    with fake_index.db.connection() as conn:
        assert check(conn, fake_index.collection.id) == []
