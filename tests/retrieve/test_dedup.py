from __future__ import annotations

import random

import pytest

from ragline.core.types import Hit
from ragline.retrieve.dedup import collapse_duplicates, estimated_jaccard, minhash, text_fingerprint

WORDS = "robot dock battery charge sensor wheel motor lidar map route shelf pallet".split()


def _hit(i: int, text: str) -> Hit:
    return Hit(
        chunk_id=i,
        document_id=i,
        doc_key=f"d{i}",
        title="T",
        source=f"s{i}",
        text=text,
        score=1.0 / (i + 1),
        rank=i + 1,
    )


def test_exact_duplicates_up_to_case_and_punctuation():
    assert text_fingerprint("Hello,  World!") == text_fingerprint("hello world")
    hits = [
        _hit(0, "Cookie notice: we use cookies."),
        _hit(1, "Unique text here"),
        _hit(2, "COOKIE NOTICE — we use cookies"),
    ]
    out = collapse_duplicates(hits, threshold=1.0)
    assert [h.chunk_id for h in out] == [0, 1] and [h.rank for h in out] == [1, 2]
    assert out[0].metadata["duplicates"] == [{"chunk_id": 2, "doc_key": "d2", "source": "s2"}]


def test_near_duplicates_collapse_distinct_texts_stay():
    rng = random.Random(1)
    base = " ".join(rng.choices(WORDS, k=150))
    near = base.replace("robot", "robots", 1) + " extra trailing words"
    other = " ".join(rng.choices(WORDS, k=150))
    assert estimated_jaccard(minhash(base), minhash(near)) > 0.85
    assert estimated_jaccard(minhash(base), minhash(other)) < 0.5
    out = collapse_duplicates([_hit(0, base), _hit(1, other), _hit(2, near)], threshold=0.8)
    assert [h.chunk_id for h in out] == [0, 1]
    assert (
        collapse_duplicates([_hit(0, base), _hit(1, other), _hit(2, near)], threshold=1.0)[
            2
        ].chunk_id
        == 2
    )


def test_threshold_validation():
    with pytest.raises(ValueError):
        collapse_duplicates([], threshold=0)


def test_boilerplate_takes_one_slot_in_search(pg_url, schema, tmp_path):
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    fake_index = make_index(
        pg_url, schema, embedder=FakeEmbedder(), chunk_max_tokens=60, chunk_overlap_tokens=0
    )
    banner = (
        "Confidential. Do not distribute outside Northwind Robotics. All rights reserved worldwide. "
        "This memo is intended only for the named recipients and may contain privileged information; "
        "if you received it in error, notify the sender immediately and delete every copy."
    )
    for i in range(6):
        body = " ".join(f"Memo {i} discusses pallet route {i} and shelf {j}." for j in range(6))
        (tmp_path / f"memo{i}.md").write_text(f"# Memo {i}\n\n{banner}\n\n## Topic\n\n{body}\n")
    fake_index.ingest(tmp_path)
    hits = fake_index.search("confidential distribute rights reserved", k=5, mode="bm25")
    banners = [h for h in hits if "Confidential" in h.text]
    assert len(banners) == 1 and "discusses" not in banners[0].text
    assert len(banners[0].metadata["duplicates"]) == 5
    fake_index.close()
