"""Reranking by an HTTP rerank server.

Two request shapes, both ``POST {base_url}/rerank``:

* ``api="tei"`` (Hugging Face text-embeddings-inference): ``{"query", "texts",
  "raw_scores": false, "truncate": true}`` → ``[{"index", "score"}, ...]``. TEI refuses
  more than its ``--max-client-batch-size`` (32 by default) texts per request, so texts go
  ``batch_size`` (default 32) at a time; ``truncate`` lets it cut passages longer than the
  model's window instead of refusing them. ``base_url`` is the server root
  (``http://host:8080``).
* ``api="cohere"`` (Cohere, Jina, vLLM, Infinity, llama.cpp): ``{"model", "query",
  "documents", "top_n"}`` → ``{"results": [{"index", "relevance_score"}, ...]}``.
  ``base_url`` includes the version (``https://api.cohere.com/v2``,
  ``https://api.jina.ai/v1``). Up to ``batch_size`` (default 100: Cohere bills one search
  unit per 100 documents) documents go in one request, asking only for ``top_k`` when
  they all fit.

The API key is read from the environment variable named by ``api_key_env`` at each
request and sent as ``Authorization: Bearer``; it is never stored, logged or put in an
error message. Requests failing with 408/409/429/5xx or a network error are retried
``max_retries`` times with exponential backoff (honouring ``Retry-After``, capped).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, RaglineError
from ..http import check_base_url, post_with_retries
from . import rank_by_scores

if TYPE_CHECKING:
    from ..core.types import Hit

APIS = ("tei", "cohere")
_DEFAULT_BATCH = {"tei": 32, "cohere": 100}


class RerankAPIError(RaglineError):
    """The rerank server refused a request or answered something unusable.
    ``status`` is the HTTP status (``None`` when the server could not be reached)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class HttpReranker:
    """Reranker backed by a TEI or Cohere/Jina-shaped ``/rerank`` endpoint."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api: str = "tei",
        api_key_env: str | None = None,
        timeout: float = 30,
        max_retries: int = 2,
        batch_size: int | None = None,
        backoff_s: float = 0.5,
    ) -> None:
        check_base_url(base_url)
        if api not in APIS:
            raise ConfigError(f"unknown rerank api {api!r}; choose one of: {', '.join(APIS)}")
        if max_retries < 0 or timeout <= 0 or (batch_size is not None and batch_size < 1):
            raise ConfigError("max_retries must be ≥ 0, timeout > 0 and batch_size ≥ 1")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/rerank"
        self.model = model
        self.api = api
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.batch_size = batch_size or _DEFAULT_BATCH[api]
        self.backoff_s = backoff_s
        self.calls = 0  # rerank calls that reached the server
        self.requests = 0  # HTTP requests sent, retries included
        self.last_scored = 0  # hits given a score in the last rerank call

    def __repr__(self) -> str:
        model = f", model={self.model!r}" if self.model else ""
        return f"HttpReranker({self.url!r}, api={self.api!r}{model})"

    def warm_up(self) -> None:
        """Nothing to load; the server is first contacted by :meth:`rerank`."""

    # -- HTTP -----------------------------------------------------------------------
    def _headers(self) -> tuple[dict[str, str], str | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers, key

    def _fail(self, message: str, key: str | None, status: int | None) -> RerankAPIError:
        if key:
            message = message.replace(key, "***")
        return RerankAPIError(message, status)

    def _call(self, payload: dict[str, Any]) -> tuple[Any, str | None, int]:
        """POST ``payload`` (retried); the decoded JSON reply, the key used, the status."""
        body = json.dumps(payload).encode("utf-8")
        headers, key = self._headers()

        def hint(status: int | None) -> str:
            if status in (401, 403):
                return (
                    f"; check the API key in ${self.api_key_env}"
                    if self.api_key_env
                    else "; the server wants an API key: pass api_key_env"
                )
            if status in (404, 405):
                return (
                    f"; is base_url right for api={self.api!r}? TEI: the server root "
                    "(http://host:8080); Cohere/Jina: with the version "
                    "(https://api.cohere.com/v2)"
                )
            if status == 413:
                return "; lower batch_size"
            return ""

        def count() -> None:
            self.requests += 1

        status, data = post_with_retries(
            self.url,
            body,
            headers,
            timeout=self.timeout,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            what=f"rerank request to {self.url} (api {self.api!r})",
            hint=hint,
            fail=lambda message, st: self._fail(message, key, st),
            on_attempt=count,
        )
        try:
            return json.loads(data.decode("utf-8")), key, status
        except ValueError as exc:
            raise self._fail(
                f"{self.url} answered HTTP {status} with invalid JSON ({exc})", key, status
            ) from None

    def _scores(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        """Scores by index into ``texts`` for one request: all of them (TEI) or the best
        ``top_n`` (Cohere shape)."""
        if self.api == "tei":
            payload: dict[str, Any] = {
                "query": query,
                "texts": list(texts),
                "raw_scores": False,
                "truncate": True,
            }
            field, score_key = None, "score"
        else:
            payload = {"query": query, "documents": list(texts), "top_n": top_n}
            if self.model:
                payload = {"model": self.model, **payload}
            field, score_key = "results", "relevance_score"
        reply, key, status = self._call(payload)
        if field is None:
            rows = reply
        else:
            rows = reply.get(field) if isinstance(reply, dict) else None
        shape = f"'{field}[].index/{score_key}'" if field else f"'[].index/{score_key}'"
        try:
            if not isinstance(rows, list):
                raise TypeError(f"expected a list, got {type(rows).__name__}")
            out: dict[int, float] = {}
            for row in rows:
                i, s = int(row["index"]), float(row[score_key])
                if not 0 <= i < len(texts) or i in out or not math.isfinite(s):
                    raise ValueError(f"bad or repeated index {i} or score {s}")
                out[i] = s
        except (KeyError, TypeError, ValueError) as exc:
            raise self._fail(
                f"{self.url} answered HTTP {status} without a usable {shape} list "
                f"({type(exc).__name__}: {exc})",
                key,
                status,
            ) from None
        expected = len(texts) if self.api == "tei" else min(top_n, len(texts))
        if len(out) != expected:
            raise self._fail(
                f"{self.url} scored {len(out)} of {len(texts)} texts, expected {expected}",
                key,
                status,
            )
        return out

    # -- Reranker -------------------------------------------------------------------
    def rerank(self, query: str, hits: Sequence[Hit], *, top_k: int) -> list[Hit]:
        """The ``top_k`` best of ``hits`` for ``query`` by the server's scores, best first;
        ties keep input order."""
        if top_k < 0:
            raise ConfigError(f"top_k must be ≥ 0, got {top_k}")
        self.last_scored = 0
        if not hits or top_k == 0:
            return []
        self.calls += 1
        texts = [h.text for h in hits]
        scores: list[float | None] = [None] * len(hits)
        single = len(texts) <= self.batch_size
        for s in range(0, len(texts), self.batch_size):
            batch = texts[s : s + self.batch_size]
            top_n = min(top_k, len(batch)) if single else len(batch)
            for i, score in self._scores(query, batch, top_n).items():
                scores[s + i] = score
        self.last_scored = sum(x is not None for x in scores)
        return rank_by_scores(hits, scores, top_k)
