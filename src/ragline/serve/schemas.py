"""Request bodies of the HTTP API (validated before any handler runs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

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
    query: Text = Field(min_length=1, max_length=4000, description="What to search for")
    k: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "bm25", "vector", "rerank"] | None = None
    filters: dict[Text, FilterValue] = Field(
        default_factory=dict,
        description="language, type, source, modified_after/before, ingested_after/before, "
        "or any metadata key",
    )
    include_history: bool = False


class Turn(BaseModel):
    role: Literal["user", "assistant", "system"]
    content: Text = Field(max_length=20000)


class AskRequest(BaseModel):
    model_config = {"extra": "forbid"}
    question: Text = Field(min_length=1, max_length=4000)
    k: int | None = Field(default=None, ge=1, le=50, description="Passages to read")
    mode: Literal["hybrid", "bm25", "vector", "rerank"] | None = None
    filters: dict[Text, FilterValue] = Field(default_factory=dict)
    history: list[Turn] = Field(default_factory=list, max_length=50)
    stream: bool = Field(default=False, description="Server-sent events: delta…, then answer")


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
