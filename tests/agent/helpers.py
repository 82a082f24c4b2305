"""A small in-memory world for the agent loop's logic tests: passages, a lexical search
over them with the real analyzer, the real extractive answerer, and scripted models."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ragline.agent import AgentLoop, Budget, SourceInfo
from ragline.analysis.analyzer import get_analyzer
from ragline.core.errors import NotFoundError
from ragline.core.types import Hit
from ragline.generate import ExtractiveAnswerer

TERMS = get_analyzer("english").terms

CORPUS = {
    "wiki": [
        ("Chopin", "Frédéric Chopin was born in Żelazowa Wola, a village in the Duchy of Warsaw."),
        ("Żelazowa Wola", "Żelazowa Wola is a village on the Utrata river, west of Warsaw."),
        ("Warsaw", "Warsaw is the capital of Poland and lies on the Vistula river."),
        ("Kraków", "Kraków was the capital of Poland until 1596 and lies on the Vistula."),
        ("Normans", "The Normans gave their name to Normandy, a region in France."),
        ("Rollo", "Rollo was the first ruler of Normandy, from 911."),
    ],
    "manuals": [
        ("Charger", "Error ERR_4021 means a charging contact fault; clean the contacts."),
        ("Parking", "Employees park in garage B; visitors use the surface lot."),
    ],
}


def hits_of(source: str) -> list[Hit]:
    base = 1000 if source == "manuals" else 0
    return [
        Hit(base + i + 1, base + i + 1, f"{source}/{t}", t, f"{source}/{t}", text, 0.0, 0)
        for i, (t, text) in enumerate(CORPUS[source])
    ]


class World:
    """``search`` counts its calls; ``slow`` seconds per search; ``broken`` sources
    raise as an unreadable collection does."""

    def __init__(self, slow: float = 0.0, broken: Sequence[str] = ()) -> None:
        self.calls: list[tuple[str, str]] = []
        self.slow = slow
        self.broken = set(broken)

    def search(self, query: str, source: str) -> list[Hit]:
        self.calls.append((query, source))
        if source in self.broken:
            raise NotFoundError(f"collection {source!r} is gone")
        if self.slow:
            time.sleep(self.slow)
        q = set(TERMS(query))
        scored = []
        for h in hits_of(source):
            n = len(q & set(TERMS(f"{h.title} {h.text}")))
            if n:
                scored.append((n, h))
        scored.sort(key=lambda x: -x[0])
        return [
            Hit(h.chunk_id, h.document_id, h.doc_key, h.title, h.source, h.text, float(n), r)
            for r, (n, h) in enumerate(scored[:3], 1)
        ]


class ScriptedChat:
    """A model that replies from a list (the last reply repeats); counts tokens by words
    and records every call's prompt + reply size."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.calls = 0
        self.tokens = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(self, messages, *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        self.tokens += sum(self.count_tokens(m["content"]) + 4 for m in messages)
        self.tokens += min(self.count_tokens(reply), max_tokens)
        return reply

    def stream(self, messages, *, max_tokens: int = 512, temperature: float = 0.0):
        yield self.complete(messages, max_tokens=max_tokens)


def loop(world: World, *, sources=("wiki",), chat=None, **budget) -> AgentLoop:
    gate = ExtractiveAnswerer()
    return AgentLoop(
        search=world.search,
        sources=[SourceInfo(s, f"the {s}", chunks=len(CORPUS.get(s, ()))) for s in sources],
        gate=gate,
        terms=TERMS,
        answerer=lambda _chat: ExtractiveAnswerer(),
        min_evidence=0.55,
        budget=Budget(**budget),
        chat=chat,
        presence=lambda s, keys: (
            sum(any(k in TERMS(t + " " + x) for t, x in CORPUS.get(s, ())) for k in keys)
            / max(len(keys), 1)
        ),
    )
