"""Budgets of one agent run: steps, model calls, tokens and wall time, enforced exactly.

* **steps** — searches (one query against one source); the loop checks before each;
* **model calls** and **tokens** — every call goes through :class:`MeteredChat`, which
  refuses a call (:class:`BudgetExhausted`) that could take the run past either limit: the
  prompt's tokens plus the reply's ``max_tokens`` must fit in what is left, so the count
  of prompt + reply tokens never exceeds the budget, whatever the model writes;
* **wall time** — checked before every step and model call; a step that has started runs
  to its end (a search is not interrupted), so a run ends at most one step past the limit.
  The first search always runs, so a slow model that spends the time planning still
  leaves an answer from evidence (measured: SmolLM2 on two busy cores spent 60 s on plan
  and route calls alone).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, RaglineError

STOP_REASONS = (
    "enough",  # the judge found the evidence sufficient
    "steps",  # the step budget is spent
    "model_calls",
    "tokens",
    "time",
    "exhausted",  # nothing new left to try (every rewrite repeats a query, no source left)
    "one_shot",  # agent=auto decided the one-shot evidence suffices
)


class BudgetExhausted(RaglineError):
    """A model call was refused because it could take the run past its budget."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Budget:
    """Limits of one run (None: unlimited)."""

    max_steps: int = 6
    max_model_calls: int | None = 8
    max_tokens: int | None = 8000
    max_seconds: float | None = 60.0

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"agent max_steps must be at least 1, got {self.max_steps}")
        for name in ("max_model_calls", "max_tokens", "max_seconds"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ConfigError(f"agent {name} must be ≥ 0 or null, got {v}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "max_model_calls": self.max_model_calls,
            "max_tokens": self.max_tokens,
            "max_seconds": self.max_seconds,
        }


@dataclass
class Meter:
    """What a run has used so far (mutable, private to one run)."""

    budget: Budget
    started: float = field(default_factory=time.perf_counter)
    steps: int = 0
    model_calls: int = 0
    tokens: int = 0
    refused: list[str] = field(default_factory=list)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def out_of_time(self) -> bool:
        b = self.budget.max_seconds
        return b is not None and self.elapsed() >= b

    def out_of_steps(self) -> bool:
        return self.steps >= self.budget.max_steps

    def can_call(self, prompt_tokens: int, max_reply: int) -> str | None:
        """Why a model call of this size may not be made now (None: it may)."""
        b = self.budget
        if b.max_model_calls is not None and self.model_calls + 1 > b.max_model_calls:
            return "model_calls"
        if b.max_tokens is not None and self.tokens + prompt_tokens + max_reply > b.max_tokens:
            return "tokens"
        if self.out_of_time():
            return "time"
        return None

    def usage(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "model_calls": self.model_calls,
            "tokens": self.tokens,
            "seconds": round(self.elapsed(), 3),
        }


class MeteredChat:
    """A chat model whose every call is counted against a :class:`Meter` and refused
    beforehand when it could overrun the budget. Same protocol as the wrapped model, so
    the answerers use it unchanged."""

    def __init__(self, chat: Any, meter: Meter) -> None:
        self.chat = chat
        self.meter = meter
        self.name = chat.name

    def count_tokens(self, text: str) -> int:
        return int(self.chat.count_tokens(text))

    def _prompt_tokens(self, messages: Sequence[Any]) -> int:
        return sum(self.count_tokens(str(m.get("content", ""))) + 4 for m in messages)

    def _admit(self, messages: Sequence[Any], max_tokens: int) -> int:
        n = self._prompt_tokens(messages)
        why = self.meter.can_call(n, max_tokens)
        if why is not None:
            self.meter.refused.append(why)
            raise BudgetExhausted(why, f"a model call was refused: the {why} budget is spent")
        self.meter.model_calls += 1
        return n

    def complete(self, messages: Sequence[Any], *, max_tokens: int = 512, **kw: Any) -> str:
        n = self._admit(messages, max_tokens)
        try:
            out = self.chat.complete(messages, max_tokens=max_tokens, **kw)
        finally:
            self.meter.tokens += n
        # a reply longer than asked (a server ignoring max_tokens) is cut to keep the bound
        used = self.count_tokens(out)
        if used > max_tokens:
            out = _cut(out, max_tokens, self.count_tokens)
            used = max_tokens
        self.meter.tokens += used
        return out

    def stream(self, messages: Sequence[Any], *, max_tokens: int = 512, **kw: Any) -> Iterator[str]:
        n = self._admit(messages, max_tokens)
        self.meter.tokens += n
        text = ""
        for piece in self.chat.stream(messages, max_tokens=max_tokens, **kw):
            if self.count_tokens(text + piece) > max_tokens:
                break
            text += piece
            yield piece
        self.meter.tokens += self.count_tokens(text)


def _cut(text: str, max_tokens: int, count: Any) -> str:
    words = text.split(" ")
    lo, hi = 0, len(words)
    while lo < hi:  # the longest prefix of words within max_tokens
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])
