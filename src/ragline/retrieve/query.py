"""Query techniques that need a language model: each switchable, each recorded.

* **Conversation-aware rewriting** (on by default, runs only when there is history):
  the last question is rewritten into a standalone one ("and how much is that?" →
  "how much is the mileage allowance?").
* **Multi-query:** ``n`` differently worded search queries for the same need.
* **Decomposition:** a compound question split into simple sub-questions.
* **HyDE:** a hypothetical answer passage, embedded for the vector leg instead of the
  question (Gao et al. 2022); BM25 still searches the question's own words.

Without a generator every technique is a no-op and the plan says so in ``notes``. The
plan (every technique's input and output) is part of the search result, for the trace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..generate.llm import ChatModel

_REWRITE = (
    "Rewrite the user's last question as one standalone question that can be understood "
    "without the conversation: replace pronouns and references with what they refer to. "
    "Keep its language. Reply with the question only."
)
_MULTI = (
    "Write {n} different search queries that would find passages answering the question. "
    "Use different words and phrasings, keep the language of the question. One query per "
    "line, no numbering, nothing else."
)
_DECOMPOSE = (
    "If the question asks for several separate things, split it into simple standalone "
    "sub-questions, one per line. If it asks one thing, reply with the question unchanged. "
    "Keep its language. Nothing else."
)
_HYDE = (
    "Write a short factual passage (two or three sentences) that answers the question, as "
    "it might appear in a handbook or manual. It is used only to search for real sources."
)
_LIST_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class QueryPlan:
    """What will be searched for a question, and how it came about."""

    original: str
    question: str
    queries: tuple[str, ...]
    hyde: str | None = None
    notes: tuple[str, ...] = ()
    techniques: Mapping[str, Any] = field(default_factory=dict)


def _lines(text: str, limit: int) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        line = _LIST_PREFIX.sub("", line).strip().strip('"')
        if line and line not in out:
            out.append(line)
    return out[:limit]


class QueryPlanner:
    def __init__(
        self,
        chat: ChatModel | None,
        *,
        rewrite: bool = True,
        multi_query: bool = False,
        decompose: bool = False,
        hyde: bool = False,
        n_queries: int = 3,
        max_tokens: int = 200,
    ) -> None:
        self.chat = chat
        self.rewrite = rewrite
        self.multi_query = multi_query
        self.decompose = decompose
        self.hyde = hyde
        self.n_queries = n_queries
        self.max_tokens = max_tokens

    def _ask(self, system: str, user: str) -> str:
        assert self.chat is not None
        return self.chat.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=self.max_tokens,
        ).strip()

    def plan(self, question: str, history: Sequence[Mapping[str, str]] = ()) -> QueryPlan:
        wanted = [
            name
            for name, on in (
                ("rewrite", self.rewrite and bool(history)),
                ("multi_query", self.multi_query),
                ("decompose", self.decompose),
                ("hyde", self.hyde),
            )
            if on
        ]
        if not wanted:
            return QueryPlan(question, question, (question,))
        if self.chat is None:
            return QueryPlan(
                question,
                question,
                (question,),
                notes=(
                    f"query techniques skipped ({', '.join(wanted)}): no generator is configured; "
                    "set generator = openai:MODEL@URL, anthropic:MODEL or llamacpp:PATH",
                ),
            )
        done: dict[str, Any] = {}
        standalone = question
        if "rewrite" in wanted:
            convo = "\n".join(
                f"{m.get('role', 'user')}: {' '.join(str(m.get('content', '')).split())[:1000]}"
                for m in history[-8:]
            )
            out = _lines(
                self._ask(_REWRITE, f"Conversation:\n{convo}\n\nLast question: {question}"), 1
            )
            if out:
                standalone = out[0]
            done["rewrite"] = standalone
        queries = [standalone]
        if "decompose" in wanted:
            subs = _lines(self._ask(_DECOMPOSE, standalone), 5)
            done["decompose"] = subs
            queries += [s for s in subs if s not in queries]
        if "multi_query" in wanted:
            variants = _lines(
                self._ask(_MULTI.format(n=self.n_queries), standalone), self.n_queries
            )
            done["multi_query"] = variants
            queries += [v for v in variants if v not in queries]
        hyde = None
        if "hyde" in wanted:
            hyde = self._ask(_HYDE, standalone) or None
            done["hyde"] = hyde
        return QueryPlan(question, standalone, tuple(queries), hyde, (), done)
