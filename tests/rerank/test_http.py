"""HttpReranker against a real HTTP server on 127.0.0.1 (see FakeRerankServer), in both
request shapes: TEI and Cohere/Jina."""

from __future__ import annotations

import importlib.util
import socket
import sys

import pytest

from ragline.core.errors import ConfigError, RaglineError
from ragline.core.protocols import Reranker
from ragline.rerank import HttpReranker, RerankAPIError

from . import FakeRerankServer, make_hits, overlap

SECRET = "sk-test-RERANK-SECRET-0123456789"
QUERY = "how do cats sleep at night"
PASSAGES = [
    "the weather is nice today",  # 0 query words
    "cats eat fish",  # 1
    "cats sleep at night in warm beds",  # 4
    "dogs sleep too",  # 1
    "cats sleep at noon",  # 3
]
BEST_FIRST = [102, 104, 101, 103, 100]  # ties (101, 103) keep input order

# the client uses httpx when it is installed, else urllib: test each one present
TRANSPORTS = ["urllib"] + (["httpx"] if importlib.util.find_spec("httpx") else [])


@pytest.fixture(autouse=True, params=TRANSPORTS)
def transport(request, monkeypatch):
    if request.param == "urllib":
        monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx → ImportError
    return request.param


@pytest.fixture()
def server():
    with FakeRerankServer() as s:
        yield s


@pytest.fixture()
def api_key(monkeypatch):
    monkeypatch.setenv("RAGLINE_TEST_RERANK_KEY", SECRET)
    return "RAGLINE_TEST_RERANK_KEY"


def tei(server: FakeRerankServer, **kw) -> HttpReranker:
    kw.setdefault("backoff_s", 0.01)
    return HttpReranker(server.root, api="tei", **kw)


def cohere(server: FakeRerankServer, **kw) -> HttpReranker:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("model", "rerank-fake")
    return HttpReranker(server.root + "/v1", api="cohere", **kw)


# -- TEI ------------------------------------------------------------------------------
def test_tei_orders_by_returned_index_and_score(server):
    rr = tei(server)
    assert isinstance(rr, Reranker)
    hits = make_hits(PASSAGES)
    out = rr.rerank(QUERY, hits, top_k=5)
    assert [h.chunk_id for h in out] == BEST_FIRST
    for pos, h in enumerate(out, start=1):
        assert h.rank == h.ranks["rerank"] == pos
        assert h.score == h.scores["rerank"] == pytest.approx(overlap(QUERY, h.text) / 10)
        assert h.scores["rrf"] == hits[h.chunk_id - 100].scores["rrf"]
    [req] = server.requests
    assert req["path"] == "/rerank"
    assert req["body"] == {
        "query": QUERY,
        "texts": PASSAGES,
        "raw_scores": False,
        "truncate": True,
    }
    assert [h.chunk_id for h in rr.rerank(QUERY, hits, top_k=2)] == BEST_FIRST[:2]
    assert (rr.calls, rr.requests, rr.last_scored) == (2, 2, 5)


def test_tei_batches_requests(server):
    rr = tei(server, batch_size=2)
    out = rr.rerank(QUERY, make_hits(PASSAGES), top_k=3)
    assert [h.chunk_id for h in out] == BEST_FIRST[:3]
    assert [r["body"]["texts"] for r in server.requests] == [
        PASSAGES[0:2],
        PASSAGES[2:4],
        PASSAGES[4:5],
    ]


def test_tei_missing_rows_are_an_error(server):
    server.script.append((200, [{"index": 0, "score": 0.5}], {}))
    with pytest.raises(RerankAPIError, match="scored 1 of 5 texts"):
        tei(server).rerank(QUERY, make_hits(PASSAGES), top_k=5)
    server.script.append((200, [{"index": 9, "score": 0.5}], {}))
    with pytest.raises(RerankAPIError, match="bad or repeated index 9"):
        tei(server).rerank(QUERY, make_hits(PASSAGES[:1]), top_k=1)
    server.script.append((200, {"results": []}, {}))
    with pytest.raises(RerankAPIError, match=r"without a usable '\[\]\.index/score' list"):
        tei(server).rerank(QUERY, make_hits(PASSAGES[:1]), top_k=1)


# -- Cohere / Jina -----------------------------------------------------------------------
def test_cohere_orders_by_relevance_score(server):
    rr = cohere(server)
    out = rr.rerank(QUERY, make_hits(PASSAGES), top_k=3)
    assert [h.chunk_id for h in out] == BEST_FIRST[:3]
    assert [h.score for h in out] == [0.4, 0.3, 0.1]
    [req] = server.requests
    assert req["path"] == "/v1/rerank"
    assert req["body"] == {
        "model": "rerank-fake",
        "query": QUERY,
        "documents": PASSAGES,
        "top_n": 3,
    }
    assert rr.last_scored == 3


def test_cohere_batches_ask_for_every_score(server):
    rr = cohere(server, batch_size=2, model=None)
    out = rr.rerank(QUERY, make_hits(PASSAGES), top_k=5)
    assert [h.chunk_id for h in out] == BEST_FIRST
    assert [r["body"]["top_n"] for r in server.requests] == [2, 2, 1]
    assert all("model" not in r["body"] for r in server.requests)


def test_cohere_reply_without_results(server):
    server.script.append((200, [{"index": 0, "relevance_score": 1.0}], {}))
    with pytest.raises(RerankAPIError, match=r"'results\[\]\.index/relevance_score'"):
        cohere(server).rerank(QUERY, make_hits(PASSAGES), top_k=2)


# -- both ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [tei, cohere], ids=["tei", "cohere"])
def test_empty_input_and_top_k(server, make):
    rr = make(server)
    assert rr.rerank(QUERY, [], top_k=3) == []
    assert rr.rerank(QUERY, make_hits(PASSAGES), top_k=0) == []
    assert server.requests == []
    with pytest.raises(ConfigError, match="top_k"):
        rr.rerank(QUERY, make_hits(PASSAGES), top_k=-1)
    assert [h.chunk_id for h in rr.rerank(QUERY, make_hits(PASSAGES), top_k=50)] == BEST_FIRST


@pytest.mark.parametrize("make", [tei, cohere], ids=["tei", "cohere"])
def test_retries_on_503_and_429(server, make):
    server.script.append((503, {"error": "model is loading"}, {"Retry-After": "0"}))
    server.script.append((429, {"message": "slow down"}, {}))
    rr = make(server, max_retries=2)
    out = rr.rerank(QUERY, make_hits(PASSAGES), top_k=5)
    assert [h.chunk_id for h in out] == BEST_FIRST
    assert rr.requests == 3 and len(server.requests) == 3


@pytest.mark.parametrize("make", [tei, cohere], ids=["tei", "cohere"])
def test_gives_up_after_max_retries(server, make):
    server.script.extend([(503, {"error": "overloaded"}, {})] * 3)
    with pytest.raises(RerankAPIError, match="failed after 2 attempts: HTTP 503: overloaded") as e:
        make(server, max_retries=1).rerank(QUERY, make_hits(PASSAGES), top_k=2)
    assert e.value.status == 503 and len(server.requests) == 2


@pytest.mark.parametrize("make", [tei, cohere], ids=["tei", "cohere"])
def test_400_is_not_retried_and_says_why(server, make):
    server.script.append((400, {"error": "batch size 5 > maximum allowed batch size 4"}, {}))
    with pytest.raises(RerankAPIError) as e:
        make(server, max_retries=3).rerank(QUERY, make_hits(PASSAGES), top_k=2)
    assert e.value.status == 400 and len(server.requests) == 1
    assert "HTTP 400: batch size 5 > maximum allowed batch size 4" in str(e.value)
    assert "/rerank" in str(e.value) and "after" not in str(e.value)


@pytest.mark.parametrize("make", [tei, cohere], ids=["tei", "cohere"])
def test_auth_header_sent_but_never_leaked(server, make, api_key):
    rr = make(server, api_key_env=api_key)
    rr.rerank(QUERY, make_hits(PASSAGES), top_k=1)
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(rr) and SECRET not in str(vars(rr))
    # a server that echoes the key back in its error must not get it into our message
    server.script.append((401, {"error": f"invalid api key {SECRET}"}, {}))
    with pytest.raises(RerankAPIError) as e:
        rr.rerank(QUERY, make_hits(PASSAGES), top_k=1)
    assert SECRET not in str(e.value) and "***" in str(e.value)
    assert f"check the API key in ${api_key}" in str(e.value)


def test_no_auth_header_without_key(server, monkeypatch):
    monkeypatch.delenv("RAGLINE_TEST_RERANK_KEY", raising=False)
    tei(server, api_key_env="RAGLINE_TEST_RERANK_KEY").rerank(QUERY, make_hits(PASSAGES), top_k=1)
    assert "Authorization" not in server.requests[-1]["headers"]


def test_wrong_path_hints_at_base_url(server):
    with pytest.raises(RerankAPIError, match="HTTP 404.*is base_url right for api='cohere'"):
        HttpReranker(server.root + "/v2", api="cohere").rerank(QUERY, make_hits(PASSAGES), top_k=1)


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    rr = HttpReranker(f"http://127.0.0.1:{port}", max_retries=1, backoff_s=0.01, timeout=2)
    with pytest.raises(RerankAPIError, match="failed after 2 attempts: unreachable") as e:
        rr.rerank(QUERY, make_hits(PASSAGES), top_k=1)
    assert e.value.status is None and isinstance(e.value, RaglineError)


def test_invalid_settings():
    with pytest.raises(ConfigError, match="choose one of: tei, cohere"):
        HttpReranker("http://localhost:8080", api="openai")
    with pytest.raises(ConfigError, match="http:// or https://"):
        HttpReranker("localhost:8080")
    with pytest.raises(ConfigError, match="max_retries"):
        HttpReranker("http://localhost:8080", max_retries=-1)
