"""The one small HTTP client every remote backend uses (embeddings, rerank, chat): a POST
with httpx when installed (else urllib), retries of network errors and retryable statuses
with exponential backoff and the server's Retry-After, and errors that quote the server's
message and say how to fix the request."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime

from .core.errors import ConfigError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_MESSAGE = 500
_MAX_WAIT_S = 30.0


def check_base_url(base_url: str) -> str:
    """``base_url`` without its trailing slash; refused unless http(s)."""
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}")
    return base_url.rstrip("/")


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


def server_message(body: bytes) -> str:
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
            reason = f"HTTP {status}: {server_message(data)}" if status >= 300 else ""
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
