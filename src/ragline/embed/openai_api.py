"""Embeddings from an OpenAI-compatible HTTP server (OpenAI, Ollama, vLLM, TEI, llama.cpp).

``POST {base_url}/embeddings`` with ``{"model": ..., "input": [...]}``; the reply's
``data[i].embedding`` rows are put back in input order by their ``index``, then
L2-normalised. The API key is read from the environment variable named by
``api_key_env`` at each request (a missing variable sends no ``Authorization`` header,
as local servers need none); it is never stored, logged or put in an error message.
Uses httpx when it is installed, else the standard library's urllib.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from ..core.errors import ConfigError, RaglineError

if TYPE_CHECKING:
    import numpy as np

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_MESSAGE = 500
_MAX_WAIT_S = 30.0


class EmbeddingAPIError(RaglineError):
    """The embeddings server refused a request or answered something unusable.
    ``status`` is the HTTP status (``None`` when the server could not be reached)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: the larger of 1.3 × whitespace words and UTF-8 bytes / 4.

    BPE tokenizers average about 1.3 tokens per English word and about 4 bytes per token;
    taking the larger errs on the side of smaller chunks for code, numbers and most
    non-English text. CJK text may still be underestimated (about 1 token per character)."""
    if not text:
        return 0
    return max(math.ceil(len(text.split()) * 1.3), math.ceil(len(text.encode("utf-8")) / 4))


def _post(
    url: str, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """One POST: (status, lower-cased headers, body). Raises OSError when unreachable."""
    try:
        import httpx
    except ImportError:
        httpx = None  # type: ignore[assignment]
    if httpx is not None:
        try:
            r = httpx.post(url, content=body, headers=headers, timeout=timeout)
        except httpx.HTTPError as exc:  # connect/read errors and timeouts
            raise OSError(type(exc).__name__ + ": " + str(exc)) from None
        return r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None


def _server_message(body: bytes) -> str:
    """The error text of an OpenAI (``error.message``), Ollama/TEI (``error``) or plain reply."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:_MAX_MESSAGE]
    if isinstance(data, dict):
        err = data.get("error", data.get("message", data.get("detail")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return str(err)[:_MAX_MESSAGE]
    return text[:_MAX_MESSAGE]


def _retry_after(headers: dict[str, str]) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def post_with_retries(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    max_retries: int,
    backoff_s: float,
    what: str,
    hint: Callable[[int | None], str],
    fail: Callable[[str, int | None], Exception],
    on_attempt: Callable[[], None] | None = None,
) -> tuple[int, bytes]:
    """POST ``body``; retry network errors and RETRY_STATUS with exponential backoff (and the
    server's Retry-After); raise ``fail(message, status)`` naming ``what`` otherwise.
    Shared by the embeddings client and the HTTP reranker."""
    attempt = 0
    while True:
        if on_attempt is not None:
            on_attempt()
        try:
            status, resp_headers, data = _post(url, body, headers, timeout)
            reason = f"HTTP {status}: {_server_message(data)}" if status >= 300 else ""
        except OSError as exc:
            status, resp_headers, data, reason = None, {}, b"", f"unreachable ({exc})"
        if status is not None and 200 <= status < 300:
            return status, data
        retryable = status is None or status in RETRY_STATUS
        if not retryable or attempt >= max_retries:
            tries = f" after {attempt + 1} attempts" if attempt else ""
            raise fail(f"{what} failed{tries}: {reason}{hint(status)}", status)
        wait = backoff_s * (2**attempt)
        server_wait = _retry_after(resp_headers)
        if server_wait is not None:
            wait = max(wait, server_wait)
        time.sleep(min(wait, _MAX_WAIT_S))
        attempt += 1


class OpenAIEmbeddingsAPI:
    """Embedder backed by an OpenAI-compatible ``/embeddings`` endpoint.

    ``dim`` is learnt from the first response when not given, then fixed (a server that
    changes it is an error). ``max_tokens`` is what the chunker may put in one input;
    set it to the served model's limit. ``query_prefix`` / ``document_prefix`` are for
    models that expect them (``"query: "`` / ``"passage: "`` for e5); when set, they are
    part of ``model_id``. Failed requests on 408/409/429/5xx or network errors are retried
    ``max_retries`` times with exponential backoff (honouring ``Retry-After``, capped)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 60,
        max_tokens: int = 512,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ConfigError("model must name the served embedding model")
        if batch_size < 1 or max_retries < 0 or timeout <= 0:
            raise ConfigError("batch_size must be ≥ 1, max_retries ≥ 0 and timeout > 0")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/embeddings"
        self.model = model
        self.api_key_env = api_key_env
        self._dim = dim
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.model_id = f"openai-api:{model}"
        if query_prefix or document_prefix:
            tag = hashlib.blake2b(
                json.dumps([query_prefix, document_prefix]).encode(), digest_size=4
            ).hexdigest()
            self.model_id += f"#prefix-{tag}"
        self.calls = 0  # number of embed_documents/embed_query calls that reached the server
        self.texts_embedded = 0
        self.requests = 0  # HTTP requests sent, retries included

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingsAPI({self.url!r}, model={self.model!r})"

    @property
    def dim(self) -> int:
        """Vector dimension; asks the server once (one short probe) when not yet known."""
        if self._dim is None:
            self._request(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def warm_up(self) -> None:
        """Learn ``dim`` from the server (idempotent); checks that it answers."""
        _ = self.dim

    def count_tokens(self, text: str) -> int:
        """An estimate (see :func:`estimate_tokens`); the server's tokenizer is not known
        here, so keep ``max_tokens`` below the served model's limit."""
        return estimate_tokens(self.document_prefix + text)

    # -- HTTP -----------------------------------------------------------------------
    def _headers(self) -> tuple[dict[str, str], str | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers, key

    def _fail(self, message: str, key: str | None, status: int | None) -> EmbeddingAPIError:
        if key:
            message = message.replace(key, "***")
        return EmbeddingAPIError(message, status)

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        """Embed one batch (one request, retried); rows in input order, unit length."""
        import numpy as np

        body = json.dumps({"model": self.model, "input": list(texts)}).encode("utf-8")
        headers, key = self._headers()

        def hint(status: int | None) -> str:
            if status in (401, 403):
                return (
                    f"; check the API key in ${self.api_key_env}"
                    if self.api_key_env
                    else "; the server wants an API key: pass api_key_env"
                )
            if status == 404:
                return "; is base_url the API root (e.g. http://host:port/v1)?"
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
            what=f"embedding request to {self.url} (model {self.model!r})",
            hint=hint,
            fail=lambda message, st: self._fail(message, key, st),
            on_attempt=count,
        )
        try:
            rows = json.loads(data.decode("utf-8"))["data"]
            pairs = sorted(
                ((int(r.get("index", i)), r["embedding"]) for i, r in enumerate(rows)),
                key=lambda p: p[0],
            )
            vectors = np.asarray([v for _, v in pairs], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self._fail(
                f"{self.url} answered HTTP {status} without a usable 'data[].embedding' list "
                f"({type(exc).__name__}: {exc})",
                key,
                status,
            ) from None
        if [i for i, _ in pairs] != list(range(len(texts))) or vectors.ndim != 2:
            raise self._fail(
                f"{self.url} returned {len(pairs)} embeddings with indices "
                f"{[i for i, _ in pairs][:10]} for {len(texts)} inputs",
                key,
                status,
            )
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise self._fail(
                f"{self.url} returned {vectors.shape[1]}-d vectors for model {self.model!r}, "
                f"expected {self._dim}",
                key,
                status,
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(vectors)) or np.any(norms == 0):
            raise self._fail(f"{self.url} returned a zero or non-finite embedding", key, status)
        return (vectors / norms).astype(np.float32)

    # -- Embedder -------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in input order), ``batch_size`` per request."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        parts = [
            self._request([self.document_prefix + t for t in texts[s : s + self.batch_size]])
            for s in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += 1
        return self._request([self.query_prefix + text])[0]
