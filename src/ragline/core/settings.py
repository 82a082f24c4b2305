"""One typed settings object, from defaults, a file and ``RAGLINE_*`` environment variables."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from .errors import ConfigError


class Settings(BaseModel):
    """Everything a ragline index needs to know; serializable with :meth:`to_dict`.

    Environment: ``RAGLINE_<FIELD>`` in upper case (e.g. ``RAGLINE_DATA_DIR``,
    ``RAGLINE_DATABASE_URL``, ``RAGLINE_COLLECTION``).
    """

    model_config = {"frozen": True, "extra": "forbid"}

    data_dir: Path = Path(".ragline")
    database_url: str | None = Field(
        default=None, description="postgresql://... ; overrides data_dir"
    )
    db_schema: str = "ragline"
    collection: str = "default"
    embedder: str = Field(
        default="auto",
        description="auto (English first documents: minilm, others: e5), minilm, e5, onnx:DIR, openai:MODEL@URL",
    )
    language: str = "english"
    chunk_max_tokens: int | None = Field(
        default=None, ge=16, description="per chunk incl. header; default: the embedder's limit - 2"
    )
    chunk_overlap_tokens: int = Field(default=32, ge=0)
    chunking: str | None = Field(
        default=None,
        description="section (default) | recursive | fixed | semantic | parent-child; "
        "fixed per collection: an existing collection keeps the strategy it was built with",
    )
    parent_max_tokens: int = Field(
        default=1024, ge=16, description="parent passage size of parent-child chunking"
    )
    child_max_tokens: int = Field(
        default=128, ge=16, description="child chunk size of parent-child chunking"
    )
    semantic_percentile: float = Field(
        default=90.0,
        gt=0,
        lt=100,
        description="semantic chunking: cut above this distance percentile",
    )
    query_languages: Literal["detected", "all"] = Field(
        default="detected",
        description="BM25: analyze a query in the collection languages it is detected to be "
        "in ('detected'), or in all of them ('all', for mixed-language queries)",
    )
    rrf_k: int = Field(default=60, ge=0)
    rrf_depth: int = Field(default=50, ge=1)
    top_k: int = Field(default=10, ge=1)
    ef_search: int = Field(default=100, ge=1)
    dedup_threshold: float | None = Field(
        default=0.85, gt=0.0, le=1.0, description="near-duplicate collapse; null: off"
    )
    answer_passages: int = Field(default=5, ge=1)
    reranker: str | None = Field(
        default=None, description="onnx:DIR, tei:URL or cohere:MODEL@URL; None: off"
    )
    rerank_depth: int = Field(
        default=50, ge=1, description="fused candidates the reranker reorders"
    )
    rerank_budget_ms: float | None = Field(
        default=None, gt=0, description="stop reranking after this long"
    )
    context_window: int = Field(
        default=1, ge=0, description="neighbour chunks added on each side of a hit"
    )
    context_max_per_doc: int = Field(default=3, ge=1)
    context_tokens: int = Field(
        default=1500, ge=64, description="token budget of the packed context"
    )
    min_evidence: float | None = Field(default=None, ge=0.0, le=1.0)
    generator: str = Field(
        default="extractive",
        description="extractive (no LLM) | local[:NAME] (`ragline models`) | openai:MODEL@URL "
        "| anthropic:MODEL | llamacpp:PATH.gguf",
    )
    generator_key_file: str | None = Field(
        default=None, description="file holding the generator's API key (else its env variable)"
    )
    generator_max_tokens: int = Field(default=512, ge=16)
    native_citations: bool = Field(
        default=False, description="anthropic: use the Messages API citations feature"
    )
    unsupported_claims: Literal["keep", "mark", "drop"] = "mark"
    support_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    contextual_retrieval: bool = Field(
        default=False,
        description="new collections: a generator-written context sentence in each chunk header",
    )
    query_rewrite: bool = Field(default=True, description="rewrite follow-ups using the history")
    multi_query: bool = False
    decompose: bool = False
    hyde: bool = False
    ingest_batch_chunks: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="chunks embedded and written together (one transaction; a document is "
        "still all-or-nothing)",
    )
    keep_versions: int = Field(
        default=0,
        ge=0,
        description="old versions kept per document (searchable with include_history)",
    )
    agent: Literal["off", "auto", "on"] = Field(
        default="off",
        description="the research loop for ask: off, auto (only when one-shot evidence is weak "
        "or the question has several parts) or on",
    )
    agent_max_steps: int = Field(default=6, ge=1, le=50, description="agent: searches per question")
    agent_max_model_calls: int | None = Field(
        default=8, ge=0, description="agent: model calls per question (null: unlimited)"
    )
    agent_max_tokens: int | None = Field(
        default=8000, ge=0, description="agent: model tokens (prompts + replies) per question"
    )
    agent_max_seconds: float | None = Field(
        default=60.0, gt=0, description="agent: wall time per question (checked between steps)"
    )
    agent_partial_answers: bool = Field(
        default=False,
        description="agent: answer the parts of a question the evidence answers and name the "
        "others (false: abstain unless every part is answered)",
    )
    agent_rewrite_margin: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="agent: added to the evidence threshold when the answer needed more than "
        "one search (more searches, more passages that merely resemble the question)",
    )
    traces: bool = Field(default=True, description="store a trace of every search and ask")
    trace_retention_days: float = Field(
        default=30.0, ge=0, description="traces older than this are deleted (0: keep all)"
    )
    embed_threads: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="CPU threads per embedding call of local models (default: up to 4); "
        "ragline serve --workers N uses 1 per worker unless set",
    )
    otel_export: bool = Field(
        default=False,
        description="also export each trace as OpenTelemetry spans (extra otel; uses the "
        "application's tracer provider)",
    )
    rate_limit: int = Field(
        default=600, ge=1, description="HTTP API: requests per minute per key (keys may override)"
    )
    purge_rewrite: bool = Field(
        default=True,
        description="purge rewrites the tables holding document text at once, so no byte of "
        "the document stays in any file; queries wait meanwhile (seconds per 100 MB of "
        "postings). false: the rewrite waits for `ragline index compact` (run it off-peak)",
    )
    purge_rewrite_max_mb: int | None = Field(
        default=2048,
        ge=1,
        description="purge rewrites at once only while the tables holding document text are "
        "smaller than this (at 10^6 chunks a rewrite, vector index included, takes minutes); "
        "larger, the erasure is reported pending for `ragline index compact`. null: always",
    )
    max_request_bytes: int = Field(
        default=1 << 20,
        ge=1024,
        description="HTTP API: largest request body but uploads (413 beyond, before it is read)",
    )
    max_upload_bytes: int = Field(
        default=100 << 20,
        ge=1024,
        description="HTTP API: largest upload request, all files together (413 beyond, "
        "refused before it is read when the size is announced, as soon as it passes otherwise)",
    )
    max_upload_files: int = Field(default=100, ge=1, description="HTTP API: files per upload")
    max_sync_files: int = Field(
        default=10_000, ge=1, description="HTTP API: files one folder sync may read"
    )
    max_query_chars: int = Field(
        default=4000, ge=1, description="longest query or question (characters)"
    )
    max_filter_chars: int = Field(
        default=4000, ge=1, description="filter keys and values together (characters)"
    )
    max_filter_values: int = Field(
        default=100, ge=1, description="filter values of one request, all keys together"
    )
    pool_size: int = Field(
        default=4,
        ge=2,
        le=64,
        description="database connections per process (at least 2: a write that meets a new "
        "group set creates its ACL class on a connection of its own)",
    )
    prepared_statements: bool = Field(
        default=True,
        description="prepare the BM25 leg's statements on each connection; false behind a "
        "pooler in transaction mode that does not track them (PgBouncer < 1.21 or "
        "max_prepared_statements = 0)",
    )
    read_database_url: str | None = Field(
        default=None,
        description="streaming replicas searches and asks read from: one postgresql:// URL or "
        "several separated by commas (writes, keys and traces stay on the primary); replica "
        "lag shows in `ragline status`",
    )
    read_from_primary: bool = Field(
        default=False,
        description="read from the primary even when replicas are set (read-your-writes)",
    )
    ingest_queue: bool = Field(
        default=False,
        description="ragline serve: uploads and syncs go to the ingest queue for `ragline "
        "worker` processes instead of a thread of the server",
    )
    parse_workers: int | None = Field(
        default=None, ge=1, description="parser processes (default: cores, max 4)"
    )
    parse_timeout_s: float | None = Field(default=None, gt=0, description="per file (default 120)")
    parse_memory_mb: int | None = Field(default=None, ge=64, description="per file (default 2048)")

    def parse_options(self) -> dict[str, Any]:
        return {
            "workers": self.parse_workers,
            "timeout_s": self.parse_timeout_s,
            "memory_mb": self.parse_memory_mb,
        }

    @field_validator("database_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v and not v.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql://")
        return v or None

    @field_validator("read_database_url")
    @classmethod
    def _read_urls(cls, v: str | None) -> str | None:
        for url in (v or "").split(","):
            if url.strip() and not url.strip().startswith(("postgresql://", "postgres://")):
                raise ValueError("each replica URL must start with postgresql://")
        return v or None

    def read_urls(self) -> list[str]:
        """The replica URLs of ``read_database_url`` ([] when none)."""
        return [u.strip() for u in (self.read_database_url or "").split(",") if u.strip()]

    @classmethod
    def resolve(
        cls,
        file: str | Path | None = None,
        *,
        data_dir: str | Path | None = None,
        collection: str | None = None,
        **overrides: Any,
    ) -> Settings:
        """:meth:`load` for a command line: an explicit ``data_dir`` (``--data-dir``) wins
        over ``RAGLINE_DATABASE_URL``."""
        if data_dir:
            overrides["data_dir"] = Path(data_dir)
        if collection:
            overrides["collection"] = collection
        s = cls.load(file, **overrides)
        return s.model_copy(update={"database_url": None}) if data_dir else s

    @classmethod
    def load(cls, file: str | Path | None = None, **overrides: Any) -> Settings:
        """Defaults < settings file (JSON) < environment < explicit ``overrides`` (None ignored)."""
        values: dict[str, Any] = {}
        if file is not None:
            try:
                values.update(json.loads(Path(file).read_text()))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read settings file {file}: {exc}") from exc
        for name in cls.model_fields:
            env = os.environ.get(f"RAGLINE_{name.upper()}")
            if env not in (None, ""):
                values[name] = env
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except Exception as exc:
            raise ConfigError(f"invalid settings: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump(mode="json")
        from ..store.db import _redact

        if d.get("database_url"):
            d["database_url"] = _redact(d["database_url"])
        if d.get("read_database_url"):
            d["read_database_url"] = _redact(d["read_database_url"])
        return d
