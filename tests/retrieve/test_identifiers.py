"""Exact identifiers in queries go first after fusion."""

from __future__ import annotations

from ragline.core.types import Hit
from ragline.ingest.sources import text_source
from ragline.retrieve.identifiers import promote_identifiers, query_identifiers
from tests.conftest import make_index
from tests.fakes import FakeEmbedder


def test_what_counts_as_an_identifier():
    assert query_identifiers("What does ERR_4021 mean?") == ["err_4021"]
    assert query_identifiers("X-570 battery, HP-E14 and МР-08") == ["x-570", "hp-e14", "мр-08"]
    assert query_identifiers("firmware v4.1.3 at 192.168.0.1?") == ["v4.1.3", "192.168.0.1"]
    # lower-case hyphenations, ratios and plain numbers are ordinary words
    assert query_identifiers("7-day-old mice, 40mg/day, 1/2000, hiv-1, 2024, 3.5") == []


def _hit(i: int, text: str) -> Hit:
    return Hit(
        chunk_id=i,
        document_id=i,
        doc_key=f"d{i}",
        title="T",
        source="s",
        text=text,
        score=1.0,
        rank=i,
    )


def test_promotion_is_stable_and_renumbers():
    hits = [
        _hit(1, "error codes overview"),
        _hit(2, "ERR_4021: fan blocked"),
        _hit(3, "other"),
        _hit(4, "see err_4021 and ERR_40210"),
    ]
    out = promote_identifiers("what is ERR_4021", hits)
    assert [h.chunk_id for h in out] == [2, 4, 1, 3]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert promote_identifiers("what is an error", hits) == hits
    # a longer identifier is not a match for a shorter one
    assert [h.chunk_id for h in promote_identifiers("ERR_40", hits)] == [1, 2, 3, 4]


def test_hybrid_puts_the_identifier_chunk_first(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    docs = {
        "faults": "KZ-22: flue sensor blocked. Clean the sensor and restart.",
        **{
            f"faq{i}": f"What does the fault code mean on the display? Fault code questions {i}, "
            "what the fault code on the display means, fault code meaning explained."
            for i in range(3)
        },
    }
    idx.ingest_sources([text_source(k, k, v) for k, v in docs.items()])
    q = "What does fault code KZ-22 mean on the display?"
    from ragline.core.types import Principal
    from ragline.retrieve.search import SearchParams

    plain = idx.searcher.search(q, Principal(), k=4, params=SearchParams(promote_identifiers=False))
    assert plain.hits[0].doc_key != "faults"  # fusion alone ranks a look-alike first
    hits = idx.search(q, k=4, mode="hybrid")
    assert hits[0].doc_key == "faults"
    idx.close()
