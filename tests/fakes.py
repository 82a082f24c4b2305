"""Deterministic fakes for unit-testing logic (never a substitute for the real model tests)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


class FakeEmbedder:
    """Bag-of-words hashing embedder: similar word sets → similar vectors. Counts calls."""

    model_id = "fake-hash-64"
    dim = 64
    max_tokens = 256  # like MiniLM: chunk size defaults to the embedder limit

    def __init__(self, dim: int | None = None) -> None:
        if dim is not None and dim != FakeEmbedder.dim:  # another model, as far as ragline knows
            self.dim, self.model_id = dim, f"fake-hash-{dim}"
        self.calls = 0
        self.texts_embedded = 0

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        n = np.linalg.norm(v)
        if n == 0:
            v[0] = 1.0
            n = 1.0
        return v / n

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        return (
            np.vstack([self._vec(t) for t in texts])
            if texts
            else np.zeros((0, self.dim), np.float32)
        )

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += 1
        return self._vec(text)


class ScriptedJSONServer:
    """A real HTTP server on 127.0.0.1 (a socket served by a thread) for JSON POST APIs.

    Records every request (path, headers, JSON body). ``script`` is a queue of
    ``(status, body, headers)`` replies sent before normal service resumes; normal service
    is :meth:`answer`, which subclasses implement."""

    def __init__(self) -> None:
        import threading
        from collections import deque
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[dict] = []
        self.script: deque = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                import json

                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"null")
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    scripted = server.script.popleft() if server.script else None
                status, payload, headers = (
                    scripted if scripted is not None else server.answer(self.path, body)
                )
                out = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def answer(self, path: str, body) -> tuple[int, object, dict[str, str]]:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


class FakeChatServer(ScriptedJSONServer):
    """An OpenAI-compatible ``/chat/completions`` and Anthropic ``/v1/messages`` server whose
    replies come from ``reply(messages) -> str`` (default: echo the last user message).
    Streams as server-sent events, one word per event, when the request asks to."""

    def __init__(self, reply=None) -> None:
        super().__init__()
        self.reply = reply or (lambda messages: messages[-1]["content"])

    def answer(self, path: str, body) -> tuple[int, object, dict[str, str]]:
        import json
        import re

        messages = list(body.get("messages") or [])
        if body.get("system"):
            messages.insert(0, {"role": "system", "content": body["system"]})
        for m in messages:  # Anthropic content blocks -> text
            if isinstance(m["content"], list):
                m["content"] = "\n".join(
                    b.get("text") or b.get("source", {}).get("data", "") for b in m["content"]
                )
        text = self.reply(messages)
        pieces = re.findall(r"\S+\s*|\s+", text) or [""]
        anthropic = path.endswith("/v1/messages")
        if not body.get("stream"):
            if anthropic:
                return 200, {"content": [{"type": "text", "text": text}]}, {}
            return 200, {"choices": [{"message": {"role": "assistant", "content": text}}]}, {}
        events = []
        for p in pieces:
            if anthropic:
                ev = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": p}}
            else:
                ev = {"choices": [{"delta": {"content": p}}]}
            events.append(f"data: {json.dumps(ev)}\n\n")
        events.append("data: [DONE]\n\n")
        return 200, "".join(events).encode(), {}


def register_fake_embedder() -> None:
    """Make the fake a backend like any plug-in: a collection built with it reopens with
    it (``get_embedder("fake-hash-64")``), in this process and in CLI runs inside it."""
    from ragline.embed import EMBEDDERS

    EMBEDDERS.add(
        FakeEmbedder.model_id,
        lambda _spec, _opt: FakeEmbedder(),
        usage=FakeEmbedder.model_id,
        about="the tests' deterministic fake",
    )
