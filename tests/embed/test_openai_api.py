"""OpenAIEmbeddingsAPI against a real HTTP server on 127.0.0.1 (see FakeEmbeddingServer)."""

from __future__ import annotations

import importlib.util
import socket
import sys

import numpy as np
import pytest

from ragline.core.errors import ConfigError, RaglineError
from ragline.embed.openai_api import EmbeddingAPIError, OpenAIEmbeddingsAPI, estimate_tokens

from . import FakeEmbeddingServer

SECRET = "sk-test-SECRET-0123456789"


# the client uses httpx when it is installed, else urllib: test each one present
TRANSPORTS = ["urllib"] + (["httpx"] if importlib.util.find_spec("httpx") else [])


@pytest.fixture(autouse=True, params=TRANSPORTS)
def transport(request, monkeypatch):
    if request.param == "urllib":
        monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx → ImportError
    return request.param


@pytest.fixture()
def server():
    with FakeEmbeddingServer(dim=32) as s:
        yield s


@pytest.fixture()
def api_key(monkeypatch):
    monkeypatch.setenv("RAGLINE_TEST_EMBED_KEY", SECRET)
    return "RAGLINE_TEST_EMBED_KEY"


def client(server: FakeEmbeddingServer, **kw) -> OpenAIEmbeddingsAPI:
    kw.setdefault("api_key_env", None)
    kw.setdefault("backoff_s", 0.01)
    return OpenAIEmbeddingsAPI(server.base_url, "fake-embed", **kw)


def test_batches_and_orders_by_index(server):
    emb = client(server, batch_size=2)
    texts = ["alpha beta", "gamma delta", "epsilon", "zeta eta theta", "iota"]
    out = emb.embed_documents(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert [t for r in server.requests for t in r["body"]["input"]] == texts
    assert all(r["body"]["model"] == "fake-embed" for r in server.requests)
    assert all(r["path"] == "/v1/embeddings" for r in server.requests)
    # the server answers rows in reverse order; the client must reorder by index
    np.testing.assert_allclose(out, server.expected(texts), atol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert (emb.calls, emb.texts_embedded, emb.requests) == (1, 5, 3)


def test_dim_learnt_from_first_response_then_fixed(server):
    emb = client(server)
    assert emb._dim is None
    emb.embed_documents(["one"])
    assert emb.dim == 32 and len(server.requests) == 1  # no extra probe
    server.dim = 16  # the server changes its model under us
    with pytest.raises(EmbeddingAPIError, match="16-d vectors.*expected 32"):
        emb.embed_query("two")


def test_dim_probe_when_asked_first(server):
    emb = client(server)
    assert emb.dim == 32
    assert len(server.requests) == 1
    assert client(server, dim=32).dim == 32 and len(server.requests) == 1  # given: no probe
    assert emb.embed_documents([]).shape == (0, 32)


def test_auth_header_sent_from_env(server, api_key):
    emb = client(server, api_key_env=api_key)
    emb.embed_query("hello")
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(emb) and SECRET not in str(vars(emb))


def test_no_auth_header_without_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    OpenAIEmbeddingsAPI(server.base_url, "m").embed_query("hello")
    assert "Authorization" not in server.requests[-1]["headers"]


def test_retries_on_503_then_succeeds(server):
    server.script.extend([(503, {"error": "loading"}, {"Retry-After": "0"})] * 2)
    server.script.append((429, {"error": {"message": "slow down"}}, {}))
    emb = client(server, max_retries=3)
    out = emb.embed_documents(["a b", "c d"])
    np.testing.assert_allclose(out, server.expected(["a b", "c d"]), atol=1e-6)
    assert len(server.requests) == 4 and emb.requests == 4


def test_retries_are_bounded(server, api_key):
    server.script.extend([(503, {"error": {"message": f"overloaded, key {SECRET}"}}, {})] * 10)
    emb = client(server, max_retries=2, api_key_env=api_key)
    with pytest.raises(EmbeddingAPIError) as info:
        emb.embed_query("x")
    assert info.value.status == 503
    assert len(server.requests) == 3
    msg = str(info.value)
    assert "after 3 attempts" in msg and "overloaded" in msg and SECRET not in msg


def test_400_is_not_retried_and_shows_server_message(server, api_key):
    server.script.append((400, {"error": {"message": "input is too long (9000 tokens)"}}, {}))
    emb = client(server, max_retries=5, api_key_env=api_key)
    with pytest.raises(EmbeddingAPIError, match=r"HTTP 400: input is too long") as info:
        emb.embed_documents(["x"])
    assert info.value.status == 400 and len(server.requests) == 1
    assert isinstance(info.value, RaglineError)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.args)


def test_401_names_the_variable_never_the_key(server, api_key):
    # OpenAI echoes (part of) a wrong key back; it must not reach our message
    server.script.append((401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}, {}))
    emb = client(server, api_key_env=api_key)
    with pytest.raises(EmbeddingAPIError) as info:
        emb.embed_query("x")
    msg = str(info.value)
    assert SECRET not in msg and "***" in msg and f"${api_key}" in msg


def test_plain_text_error_body_and_404_hint(server):
    server.script.append((404, b"no route here", {}))
    with pytest.raises(EmbeddingAPIError, match=r"HTTP 404: no route here.*base_url"):
        client(server).embed_query("x")


def test_malformed_success_is_an_error(server):
    server.script.append((200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]}, {}))
    with pytest.raises(EmbeddingAPIError, match="1 embeddings .* for 2 inputs"):
        client(server).embed_documents(["a", "b"])
    server.script.append((200, {"result": []}, {}))
    with pytest.raises(EmbeddingAPIError, match="without a usable"):
        client(server).embed_documents(["a"])
    server.script.append((200, {"data": [{"index": 0, "embedding": [0.0, 0.0]}]}, {}))
    with pytest.raises(EmbeddingAPIError, match="zero or non-finite"):
        client(server).embed_documents(["a"])


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nobody listens
    emb = OpenAIEmbeddingsAPI(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff_s=0.01)
    with pytest.raises(EmbeddingAPIError, match="unreachable") as info:
        emb.embed_query("x")
    assert info.value.status is None


def test_prefixes_are_sent_and_change_the_model_id(server):
    emb = client(server, query_prefix="query: ", document_prefix="passage: ")
    emb.embed_query("q")
    emb.embed_documents(["d"])
    assert [r["body"]["input"] for r in server.requests] == [["query: q"], ["passage: d"]]
    assert emb.model_id.startswith("openai-api:fake-embed#prefix-")
    assert client(server).model_id == "openai-api:fake-embed"


def test_constructor_validates():
    with pytest.raises(ConfigError, match="http"):
        OpenAIEmbeddingsAPI("localhost:8080/v1", "m")
    with pytest.raises(ConfigError, match="model"):
        OpenAIEmbeddingsAPI("http://localhost:8080/v1", "")


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("one two three") == 4  # 3 words × 1.3
    assert estimate_tokens("x" * 400) == 100  # one long "word": bytes / 4
    assert estimate_tokens("Příliš žluťoučký kůň") >= 4
