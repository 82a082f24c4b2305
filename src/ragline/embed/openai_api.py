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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..core.errors import ConfigError, RaglineError
from ..http import check_base_url, post_with_retries

if TYPE_CHECKING:
    import numpy as np


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
        base_url = check_base_url(base_url)
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
    def embed_documents(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in input order), ``batch_size`` per request."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        parts = []
        for s in range(0, len(texts), self.batch_size):
            part = texts[s : s + self.batch_size]
            parts.append(self._request([self.document_prefix + t for t in part]))
            if progress is not None:
                progress(len(part))
        return np.vstack(parts).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += 1
        return self._request([self.query_prefix + text])[0]
