"""Embedders behind one protocol (:class:`ragline.core.protocols.Embedder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import ConfigError

if TYPE_CHECKING:
    from ..core.protocols import Embedder

EMBEDDERS = {"minilm": "all-MiniLM-L6-v2 int8 ONNX (English, 384-d, default)"}


def get_embedder(name: str = "minilm") -> Embedder:
    """Build an embedder by name; unknown names list the valid choices."""
    if name in ("minilm", "default", "all-MiniLM-L6-v2-int8-onnx"):
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    raise ConfigError(f"unknown embedder {name!r}; choose one of: {', '.join(EMBEDDERS)}")
