"""What every HTTP response and request body goes through: security headers, and a size
limit on request bodies that refuses them early.

A body whose ``Content-Length`` is over its limit is answered 413 before a byte of it is
read; a body sent without one (chunked) is counted as it arrives and refused as soon as
it passes the limit, whatever the route was doing with it. Uploads
(``POST /v1/documents``) have their own, larger limit (``max_upload_bytes``); every other
body has ``max_request_bytes``. Nothing is written before a body is known to fit: the
upload route only runs once the whole multipart body has been received.

Headers: a Content-Security-Policy that lets the page load only its own script, style and
API calls (``frame-ancestors 'none'``: no framing), ``X-Content-Type-Options: nosniff``,
``Referrer-Policy: no-referrer``, ``X-Frame-Options: DENY``, cross-origin isolation of
opener and resources, and ``Cache-Control: no-store`` on API answers (they hold tenant
data). The interactive API docs (``/docs``, ``/redoc``) load FastAPI's assets from its CDN
and get a policy that allows exactly that.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_CDN = "https://cdn.jsdelivr.net"
DOCS_CSP = (
    f"default-src 'none'; script-src 'self' 'unsafe-inline' {_CDN}; "
    f"style-src 'self' 'unsafe-inline' {_CDN} https://fonts.googleapis.com; "
    f"img-src 'self' data: https://fastapi.tiangolo.com {_CDN}; "
    "font-src 'self' https://fonts.gstatic.com; connect-src 'self'; worker-src blob:; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
}
DOCS_PATHS = ("/docs", "/redoc")


def security_headers(path: str) -> dict[str, str]:
    """The headers every response to ``path`` carries."""
    docs = path == "/docs" or path.startswith(("/docs/", "/redoc"))
    out = {"content-security-policy": DOCS_CSP if docs else PAGE_CSP, **SECURITY_HEADERS}
    if path.startswith("/v1/"):
        out["cache-control"] = "no-store"
    return out


class Guard:
    """ASGI middleware: headers on every response, body size limits on every request."""

    def __init__(
        self,
        app: Any,
        *,
        max_body: int,
        max_upload: int,
        upload_path: str = "/v1/documents",
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload
        self.upload_path = upload_path

    def limit(self, scope: Scope) -> tuple[int, str]:
        if scope.get("method") == "POST" and scope.get("path") == self.upload_path:
            return self.max_upload, "max_upload_bytes"
        return self.max_body, "max_request_bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = security_headers(scope.get("path", ""))
        limit, setting = self.limit(scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(send, extra, declared, limit, setting)
            return
        seen = 0
        tripped = False
        started = False

        async def counted() -> Message:
            nonlocal seen, tripped
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    tripped = True
                    # the route fails reading the body (how depends on the route); the
                    # response it then starts is replaced by the 413 below
                    raise BodyTooLarge(f"request body over {limit} bytes")
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if tripped:
                    started = True
                    await _too_large(send, extra, seen, limit, setting)
                    return
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                headers = list(message.get("headers", []))
                for k, v in extra.items():
                    if k.encode() not in have:
                        headers.append((k.encode(), v.encode()))
                message["headers"] = headers
            elif tripped:  # the body of the response the 413 replaced
                return
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except BodyTooLarge:
            if not started:
                await _too_large(send, extra, seen, limit, setting)


class BodyTooLarge(Exception):
    """Raised into the route when the body passes its limit (never reaches a client)."""


def _content_length(scope: Scope) -> int | None:
    for k, v in scope.get("headers", []):
        if k.lower() == b"content-length":
            try:
                return int(v)
            except ValueError:
                return None
    return None


async def _too_large(
    send: Send, extra: dict[str, str], size: int, limit: int, setting: str
) -> None:
    what = "upload" if setting == "max_upload_bytes" else "request body"
    body = json.dumps(
        {
            "error": {
                "message": f"the {what} is larger than the {_size(limit)} this server accepts "
                f"({setting}); send less"
                + (" (fewer or smaller files)" if setting == "max_upload_bytes" else ""),
                "type": "invalid_request_error",
                "code": 413,
            }
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *((k.encode(), v.encode()) for k, v in extra.items()),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"
