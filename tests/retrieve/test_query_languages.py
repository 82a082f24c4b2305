"""BM25 analyzes a query in the collection languages it is detected to be in."""

from __future__ import annotations

import pytest

from ragline.core.types import Principal
from ragline.ingest.sources import text_source

CS = "Práce z domova je možná jeden den v týdnu, až po zkušební době. Heslo má dvanáct znaků."
EN = "Working from home: the home office rules allow one day a week. Error GT-A17 means low flow."
HU = (
    "A panzió reggelijéről. Breakfast at the Keszthely guest house is served from 07:30 to "
    "10:00 in the garden room. A kerékpárokat a recepción lehet kölcsönözni."
)


@pytest.fixture()
def mixed(fake_index):
    fake_index.ingest_sources(
        [
            text_source(lang, "Notes", text, metadata={"language": lang})
            for lang, text in (("cs", CS), ("en", EN), ("hu", HU))
        ]
    )
    return fake_index


def _langs(idx, query):
    return [h.metadata.get("language") for h in idx.search(query, mode="bm25", k=10)]


def test_a_czech_question_is_not_also_stemmed_as_english(mixed):
    # Czech stems of "home office" (hom, offik) are not the English document's (home, offic)
    assert _langs(mixed, "Smím pracovat na home office?") == ["cs"]
    assert _langs(mixed, "prace z domova") == ["cs"]  # typed without diacritics
    mixed.settings = mixed.settings.model_copy(update={"query_languages": "all"})
    assert sorted(_langs(mixed, "Smím pracovat na home office?")) == ["cs", "en"]


def test_codes_and_mixed_documents_are_still_found(mixed):
    assert _langs(mixed, "Co znamená porucha GT-A17?") == ["en"]  # a code, any language
    # a mostly English passage in a document detected as Hungarian
    assert _langs(mixed, "When is breakfast served at the Keszthely guest house?") == ["hu"]


def test_eval_and_search_share_the_setting(mixed):
    from ragline.evaluate.retrieval import eval_params

    assert eval_params(mixed, 50).query_languages == "detected"
    mixed.settings = mixed.settings.model_copy(update={"query_languages": "all"})
    assert eval_params(mixed, 50).query_languages == "all"


def test_server_loads_the_detector_only_for_a_multilingual_collection(fake_index):
    pytest.importorskip("fastapi")
    from ragline.serve.app import _multilingual

    assert not _multilingual(fake_index)  # nothing ingested
    fake_index.ingest_sources([text_source("en", "Notes", EN, metadata={"language": "en"})])
    assert not _multilingual(fake_index)
    fake_index.ingest_sources([text_source("cs", "Notes", CS, metadata={"language": "cs"})])
    assert _multilingual(fake_index)


def test_a_write_through_the_index_is_seen_by_its_next_search(fake_index):
    """The languages a caller may read are cached ~10 s per caller; a write through the
    same Index drops them, so its next query is analyzed in the new document's language
    too (and a deleted document's language is gone at once)."""
    fake_index.ingest_sources([text_source("en", "Notes", EN, metadata={"language": "en"})])
    assert _langs(fake_index, "pracovat z domova") == []  # caches ("en",)
    fake_index.ingest_sources([text_source("cs", "Notes", CS, metadata={"language": "cs"})])
    assert _langs(fake_index, "pracovat z domova") == ["cs"]
    fake_index.delete("cs")
    res = fake_index.search_result("pracovat z domova", mode="bm25", k=10)
    assert not res.hits
    assert fake_index.searcher._languages(Principal("default", ()), False) == ("en",)
