"""The agent's steps written by a language model, as strict JSON.

Each step asks for one JSON object of a fixed shape, validates it, asks once more with
the validation error when it is malformed, and otherwise returns ``None`` so the loop
falls back to the no-LLM step (:mod:`ragline.agent.heuristics`) and notes why. A model
call refused by the budget (:class:`~ragline.agent.budget.BudgetExhausted`) also returns
``None``. Evidence shown to the model is delimited and neutralized like an answer prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..core.types import Hit
from ..generate.prompt import neutralize
from .budget import BudgetExhausted

MAX_REPLY_TOKENS = 160
RETRIES = 1
_OBJ = re.compile(r"\{.*\}", re.S)

PLAN = (
    "You plan searches for a question over a document collection. If answering needs "
    "several facts, list standalone sub-questions (at most 4), else the question itself. "
    'Reply with JSON only: {"sub_questions": ["..."]}'
)
JUDGE = (
    "Decide whether the passages are enough to answer the question. Reply with JSON "
    'only: {"enough": true or false, "missing": "what is still missing, in a few words"}'
)
REWRITE = (
    "Write one new search query that would find what is still missing to answer the "
    "question. It must differ from every query already tried. Reply with JSON only: "
    '{"query": "..."}'
)
ROUTE = (
    "Choose the sources to search for the question, from the list given (names exactly "
    'as listed). Reply with JSON only: {"sources": ["name", ...]}'
)


class StepFailed(Exception):
    """The model's reply failed validation (message: why)."""


def parse_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply (code fences and text around it tolerated)."""
    m = _OBJ.search(text or "")
    if not m:
        raise StepFailed("no JSON object in the reply")
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        raise StepFailed(f"invalid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise StepFailed("the reply is not a JSON object")
    return obj


def _str_list(obj: dict[str, Any], key: str, limit: int) -> list[str]:
    v = obj.get(key)
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
        raise StepFailed(f"{key!r} must be a non-empty list of strings")
    return list(dict.fromkeys(" ".join(x.split()) for x in v))[:limit]


class LLMSteps:
    """The model-written steps over one (metered) chat model; ``log`` receives one dict
    per model call (step, ok, error) for the trace."""

    def __init__(self, chat: Any, log: Callable[[dict[str, Any]], None]) -> None:
        self.chat = chat
        self.log = log

    def _ask(
        self, step: str, system: str, user: str, check: Callable[[dict[str, Any]], Any]
    ) -> Any:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for attempt in range(RETRIES + 1):
            try:
                reply = self.chat.complete(messages, max_tokens=MAX_REPLY_TOKENS)
            except BudgetExhausted as exc:
                self.log({"step": step, "ok": False, "error": str(exc), "budget": exc.reason})
                return None
            except Exception as exc:  # a failing server: the no-LLM step takes over
                self.log({"step": step, "ok": False, "error": f"model call failed: {exc}"})
                return None
            try:
                out = check(parse_object(reply))
            except StepFailed as exc:
                self.log(
                    {
                        "step": step,
                        "ok": False,
                        "error": str(exc),
                        "reply": reply[:300],
                        "attempt": attempt + 1,
                    }
                )
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply[:500]},
                    {"role": "user", "content": f"That reply was invalid: {exc}. JSON only."},
                ]
                continue
            self.log({"step": step, "ok": True, "attempt": attempt + 1})
            return out
        return None

    def plan(self, question: str) -> list[str] | None:
        return self._ask(
            "plan", PLAN, f"Question: {question}", lambda o: _str_list(o, "sub_questions", 4)
        )

    def judge(self, question: str, hits: Sequence[Hit]) -> tuple[bool, str] | None:
        def check(o: dict[str, Any]) -> tuple[bool, str]:
            if not isinstance(o.get("enough"), bool):
                raise StepFailed("'enough' must be true or false")
            missing = o.get("missing", "")
            if not isinstance(missing, str):
                raise StepFailed("'missing' must be a string")
            return o["enough"], " ".join(missing.split())[:300]

        return self._ask("judge", JUDGE, f"Question: {question}\n\n{_passages(hits)}", check)

    def rewrite(self, question: str, missing: str, tried: Sequence[str]) -> str | None:
        def check(o: dict[str, Any]) -> str:
            q = o.get("query")
            if not isinstance(q, str) or not q.strip():
                raise StepFailed("'query' must be a non-empty string")
            q = " ".join(q.split())[:500]
            if q.casefold() in {t.casefold() for t in tried}:
                raise StepFailed("that query was already tried")
            return q

        user = (
            f"Question: {question}\nStill missing: {missing or 'unknown'}\n"
            "Already tried:\n" + "\n".join(f"- {t}" for t in tried)
        )
        return self._ask("rewrite", REWRITE, user, check)

    def route(self, question: str, sources: Sequence[Any]) -> list[str] | None:
        names = {s.name for s in sources}

        def check(o: dict[str, Any]) -> list[str]:
            picked = _str_list(o, "sources", len(names) or 1)
            unknown = [p for p in picked if p not in names]
            if unknown:  # a source the caller may not read, or none at all
                raise StepFailed(f"not a source you may search: {', '.join(unknown)}")
            return picked

        listing = "\n".join(f"- {s.name}: {s.description or '(no description)'}" for s in sources)
        return self._ask("route", ROUTE, f"Question: {question}\n\nSources:\n{listing}", check)


def _passages(hits: Sequence[Hit], limit: int = 4, chars: int = 600) -> str:
    parts = []
    for i, h in enumerate(hits[:limit], 1):
        parts.append(f"<passage {i}>\n{neutralize(h.text[:chars])}\n</passage {i}>")
    return "\n".join(parts) or "(no passages)"
