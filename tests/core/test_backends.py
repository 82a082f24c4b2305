"""The one spec parser and the per-stage registries."""

from __future__ import annotations

import pytest

from ragline.core.backends import Registry, parse_spec
from ragline.core.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "kind", "target"),
    [
        ("minilm", "minilm", ""),
        ("onnx:/models/bge", "onnx", "/models/bge"),
        ("tei:http://h:8080", "tei", "http://h:8080"),
        (
            "openai:nomic-embed-text:latest@http://h:11434/v1",
            "openai",
            "nomic-embed-text:latest@http://h:11434/v1",
        ),
        ("  OpenAI:m  ", "openai", "m"),
    ],
)
def test_parse_spec(text, kind, target):
    s = parse_spec(text)
    assert (s.kind, s.target) == (kind, target)


def test_model_at_url_takes_the_url_from_the_last_at_http():
    assert parse_spec("openai:org/m@v2@https://h/v1").model_at_url() == ("org/m@v2", "https://h/v1")
    assert parse_spec("openai:m").model_at_url("https://api/v1") == ("m", "https://api/v1")
    with pytest.raises(ConfigError, match="names no server"):
        parse_spec("openai:m").model_at_url()
    with pytest.raises(ConfigError, match="names no model"):
        parse_spec("openai:@http://h/v1").model_at_url()
    with pytest.raises(ConfigError, match="no credentials"):
        parse_spec("openai:m@http://u:secret@h/v1").model_at_url()


def test_registry_builds_by_kind_and_alias_and_lists_choices():
    reg = Registry("widgets", noun="widget", also="none")
    reg.add(
        "a",
        lambda spec, opt: ("a", spec.target, opt),
        usage="a:PATH",
        about="A",
        aliases=("alpha",),
    )
    reg.add("b", lambda spec, opt: ("b", spec.target, opt), usage="b", about="B")
    assert reg.create("a:/x", n=1) == ("a", "/x", {"n": 1})
    assert reg.create("ALPHA")[0] == "a"
    assert reg.usages() == {"a:PATH": "A", "b": "B"}
    with pytest.raises(ConfigError) as info:
        reg.create("c:1")
    assert "unknown widget 'c:1'" in str(info.value)
    for choice in ("a:PATH", "b", "none"):
        assert choice in str(info.value)


def test_every_stage_refuses_an_unknown_backend_listing_its_choices():
    from ragline.embed import get_embedder
    from ragline.generate.llm import get_chat_model
    from ragline.rerank import get_reranker

    with pytest.raises(ConfigError, match=r"onnx:/path/to/dir.*openai:MODEL"):
        get_embedder("bge-m3")
    with pytest.raises(ConfigError, match=r"tei:http://host:port"):
        get_reranker("colbert:x")
    with pytest.raises(ConfigError, match=r"llamacpp:/path/model.gguf.*extractive"):
        get_chat_model("gpt-4")
