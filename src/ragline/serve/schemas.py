"""Request bodies of the HTTP API (validated before any handler runs)."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from fastapi import HTTPException
from pydantic import AfterValidator, BaseModel, Field


def _no_nul(v: Any) -> Any:
    """PostgreSQL text cannot hold NUL; refuse it up front with a clear message."""
    if isinstance(v, str) and "\x00" in v:
        raise ValueError("text must not contain NUL (\\u0000) characters")
    if isinstance(v, list):
        for x in v:
            _no_nul(x)
    if isinstance(v, dict):
        for k, x in v.items():
            _no_nul(k)
            _no_nul(x)
    return v


Text = Annotated[str, AfterValidator(_no_nul)]
FilterValue = Text | list[Text]


class SearchRequest(BaseModel):
    model_config = {"extra": "forbid"}
    query: Text = Field(
        min_length=1, description="What to search for (at most max_query_chars, default 4000)"
    )
    k: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "bm25", "vector", "rerank"] | None = None
    filters: dict[Text, FilterValue] = Field(
        default_factory=dict,
        description="language, type, source, modified_after/before, ingested_after/before, "
        "or any metadata key (at most max_filter_values values and max_filter_chars "
        "characters in all, defaults 100 and 4000)",
    )
    include_history: bool = False


class Turn(BaseModel):
    role: Literal["user", "assistant", "system"]
    content: Text = Field(max_length=20000)


class AskRequest(BaseModel):
    model_config = {"extra": "forbid"}
    question: Text = Field(min_length=1, description="At most max_query_chars (default 4000)")
    k: int | None = Field(default=None, ge=1, le=50, description="Passages to read")
    mode: Literal["hybrid", "bm25", "vector", "rerank"] | None = None
    filters: dict[Text, FilterValue] = Field(default_factory=dict)
    history: list[Turn] = Field(default_factory=list, max_length=50)
    stream: bool = Field(default=False, description="Server-sent events: delta…, then answer")
    agent: Literal["off", "auto", "on"] | None = Field(
        default=None, description="The research loop: off, auto or on (default: the server's)"
    )
    sources: list[Text] | None = Field(
        default=None, max_length=50, description="Sources the agent may route to (GET /v1/sources)"
    )


class SyncRequest(BaseModel):
    model_config = {"extra": "forbid"}
    path: Text = Field(min_length=1, max_length=4096)
    groups: list[Text] = Field(default_factory=list, max_length=100)


class KeyRequest(BaseModel):
    model_config = {"extra": "forbid"}
    groups: list[Text] = Field(default_factory=list, max_length=100)
    admin: bool = False
    name: Text = Field(default="", max_length=200)
    rate_limit: int | None = Field(default=None, ge=1, le=1_000_000)


# -- form fields of uploads (multipart: the models above do not see them) -----------------
def form_text(field: str, value: Any) -> None:
    """Form fields skip the models' validators: refuse NUL with a 400, not a crash."""
    try:
        _no_nul(value)
    except ValueError as exc:
        raise HTTPException(400, f"{field}: {exc}") from exc


def _finite(text: str) -> float:
    """NaN, ±Infinity and 1e999 parse in Python, but PostgreSQL's jsonb refuses them."""
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} is not a finite JSON number")
    return v


def metadata_field(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    try:
        meta = json.loads(text, parse_float=_finite, parse_constant=_finite)
    except json.JSONDecodeError as exc:
        raise HTTPException(400, f"metadata is not JSON: {exc.msg}") from exc
    except ValueError as exc:
        raise HTTPException(400, f"metadata is not JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise HTTPException(400, 'metadata must be a JSON object, e.g. {"department": "hr"}')
    form_text("metadata", meta)
    return {str(k): v for k, v in meta.items()}
