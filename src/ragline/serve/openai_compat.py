"""``POST /v1/chat/completions`` and ``GET /v1/models``: ragline as an OpenAI-style model.

The last user message is the question; the earlier turns are the history that drives
query rewriting. The reply's content is the cited answer (inline ``[n]``) followed by a
"Sources" list, and the response carries the same sources as structured ``citations``
(plus ``ragline.trace_id``), so both plain chat UIs and programs get them. Streaming
follows the OpenAI chunk format and ends with ``data: [DONE]``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, field_validator

from ..core.errors import RaglineError
from ..core.requests import AskRequest as Ask
from ..core.trace import citation_dict
from ..core.types import Answer, breadcrumb
from .auth import Who

log = logging.getLogger("ragline.serve")
MODEL_ID = "ragline"
_TEXT_PARTS = ("text", "input_text")
AGENT_MODEL_ID = "ragline-agent"
"""The model name that answers through the research loop (agent = on)."""
_FOOTER = re.compile(r"\n\nSources:\n(?:\[\d+\][^\n]*\n?)+\Z")


class ChatMessage(BaseModel):
    model_config = {"extra": "allow"}
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    @field_validator("content")
    @classmethod
    def _text_parts_are_strings(cls, content: Any) -> Any:
        """A text part's ``text`` must be a string: ``{"a": 1}`` is a client bug, and
        answering the question "{'a': 1}" would hide it."""
        if isinstance(content, list):
            for i, p in enumerate(content):
                if p.get("type") in _TEXT_PARTS and not isinstance(p.get("text"), str | None):
                    raise ValueError(
                        f"content part {i} is of type {p['type']!r} but its 'text' is a "
                        f"{type(p['text']).__name__}, not a string; send "
                        '{"type": "text", "text": "your question"}'
                    )
        return content


class ChatRequest(BaseModel):
    """The OpenAI request; sampling options (temperature, top_p, …) are accepted and
    ignored: the answer comes from the configured generator."""

    model_config = {"extra": "allow"}
    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=200)
    stream: bool = False


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for p in content:
        if isinstance(p, dict) and p.get("type") in _TEXT_PARTS:
            parts.append(str(p.get("text") or ""))  # a null text is no text, not "None"
    return "\n".join(parts)


def split_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """(question, history): the last user message, and the user/assistant turns before it
    (our own "Sources" footers stripped, so rewriting sees the answers alone)."""
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last is None:
        raise HTTPException(400, "messages need at least one user message (the question)")
    question = _text(messages[last].content).strip()
    if not question:
        raise HTTPException(400, "the last user message is empty; put the question in it")
    if "\x00" in question:  # its length is checked with the others (max_query_chars)
        raise HTTPException(400, "the question must not contain NUL characters")
    history = []
    for m in messages[:last]:
        if m.role in ("user", "assistant"):
            text = _FOOTER.sub("", _text(m.content)).replace("\x00", "")
            if text.strip():
                history.append({"role": m.role, "content": text[:20000]})
    return question, history[-20:]


def source_line(c: dict[str, Any]) -> str:
    where = breadcrumb(c.get("title") or c.get("doc_key") or "", c.get("heading_path") or ())
    extra = [c["source"]] if c.get("source") else []
    if c.get("page"):
        extra.append(f"p. {c['page']}")
    if c.get("modified_at"):
        extra.append(str(c["modified_at"])[:10])
    return f"[{c['number']}] {where}" + (f" ({', '.join(extra)})" if extra else "")


def sources_for(text: str, answer: Answer) -> list[dict[str, Any]]:
    """The sources the markers of ``text`` name. The final answer's own citations when
    ``text`` is its text; for text streamed before the check, markers are positions in
    the passages the model read (``answer.hits``)."""
    if text.strip() == answer.text.strip():
        return [citation_dict(c, answer.hits) for c in answer.citations]
    from ..generate.citations import citation_from_hit, parse_markers

    positions = sorted({n for n in parse_markers(text) if 1 <= n <= len(answer.hits)})
    return [citation_dict(citation_from_hit(answer.hits[n - 1], n), answer.hits) for n in positions]


def with_footer(text: str, sources: list[dict[str, Any]]) -> str:
    if not sources:
        return text
    return text.rstrip() + "\n\nSources:\n" + "\n".join(source_line(c) for c in sources)


def add_chat_routes(app: FastAPI, srv: Any) -> None:
    model_ids = [MODEL_ID, AGENT_MODEL_ID, srv.index.settings.collection]

    @app.get("/v1/models", tags=["openai"], summary="The models this server answers as")
    def models(_c: Who) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "ragline"}
                for m in dict.fromkeys(model_ids)
            ],
        }

    @app.post(
        "/v1/chat/completions",
        tags=["openai"],
        summary="OpenAI-compatible chat: a cited answer from the caller's documents",
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    def chat(req: ChatRequest, c: Who) -> Any:
        if req.model not in model_ids:
            raise HTTPException(
                404, f"model {req.model!r} does not exist; use one of: {', '.join(model_ids)}"
            )
        question, history = split_messages(req.messages)
        agent = "on" if req.model == AGENT_MODEL_ID else None  # the research loop
        ask = Ask(question, history=tuple(history), agent=agent)
        items = srv.ask_items(c, ask, stream=req.stream)
        created = int(time.time())
        shown = _Shown(srv.view, c.tenant)
        if not req.stream:
            answer = [i for i in items if isinstance(i, Answer)][-1]
            return completion(answer, req.model, created, shown)
        return StreamingResponse(
            stream_chunks(items, req.model, created, shown), media_type="text/event-stream"
        )


def _meta(answer: Answer) -> dict[str, Any]:
    return {
        "abstained": answer.abstained,
        "trace_id": answer.trace_id,
        "grounded_ratio": answer.grounded_ratio,
        "generator": answer.generator,
        "notes": list(answer.notes),
    }


class _Shown:
    """The public view for one caller: ids encrypted, no server paths, inert markup."""

    def __init__(self, view: Any = None, tenant: str = "") -> None:
        self.view, self.tenant = view, tenant

    def sources(self, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.view is None:
            return sources
        return [self.view.citation(c) for c in self.view.out(sources, self.tenant)]

    def text(self, text: str) -> str:
        from .public import neutralize

        return text if self.view is None else neutralize(text)


def completion(
    answer: Answer, model: str, created: int, shown: _Shown | None = None
) -> dict[str, Any]:
    shown = shown or _Shown()
    sources = shown.sources(sources_for(answer.text, answer))
    content = with_footer(shown.text(answer.text), sources)
    completion_tokens = len(content.split())
    return {
        "id": f"chatcmpl-{answer.trace_id or created}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": answer.prompt_tokens or 0,
            "completion_tokens": completion_tokens,
            "total_tokens": (answer.prompt_tokens or 0) + completion_tokens,
        },
        "citations": sources,
        "ragline": _meta(answer),
    }


def stream_chunks(
    items: Iterator[str | Answer], model: str, created: int, shown: _Shown | None = None
) -> Iterator[str]:
    shown = shown or _Shown()
    cid = f"chatcmpl-{created}"

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body, ensure_ascii=False, default=str)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    streamed: list[str] = []
    try:
        for item in items:
            if isinstance(item, Answer):
                sources = shown.sources(sources_for("".join(streamed), item))
                footer = with_footer("", sources)
                if footer:
                    yield chunk({"content": footer})
                yield chunk({}, "stop", citations=sources, ragline=_meta(item))
            elif item:
                streamed.append(item)
                yield chunk({"content": shown.text(item)})
    except RaglineError as exc:  # the stream has started: say so in-band, then end it
        err = {"error": {"message": str(exc), "type": "invalid_request_error"}}
        yield f"data: {json.dumps(err)}\n\n"
    except Exception as exc:  # never the exception text: it may hold server details
        log.exception("chat stream failed")
        err = {"error": {"message": f"internal error: {type(exc).__name__}", "type": "error"}}
        yield f"data: {json.dumps(err)}\n\n"
    yield "data: [DONE]\n\n"
