"""The MCP server: ``search`` and ``ask`` over one index, as one API key.

An MCP client (Claude Desktop, an IDE, an agent framework) starts ``ragline mcp`` and
talks JSON-RPC over its stdin/stdout. The server runs as the API key it was started
with: every tool call reads only that key's tenant and groups, the same permission
filter the HTTP API applies, and the key is looked up again on each call, so revoking it
(``ragline keys revoke``) stops the server from answering at once. stdout is the
protocol channel; logs go to stderr.

Each tool returns text written for the model to read (numbered passages; an answer
with ``[n]`` markers and its sources) and the same data as structured content, in the
JSON shapes of the HTTP API (:func:`ragline.core.trace.hit_dict`,
:func:`ragline.core.trace.answer_dict`).
"""

import logging
import os
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs it for TypedDict schemas before 3.12

from ..admin import ApiKey
from ..core.errors import ConfigError, RaglineError
from ..core.requests import AskRequest as Ask
from ..core.requests import SearchRequest as Search
from ..core.trace import answer_dict, search_dict
from ..core.types import breadcrumb
from .public import PublicView

log = logging.getLogger("ragline.mcp")

API_KEY_ENV = "RAGLINE_API_KEY"
MAX_TEXT = 4000
"""Longest query or question accepted (as the HTTP API)."""
MAX_K = 50

INSTRUCTIONS = (
    "ragline searches and answers from a private document collection (manuals, policies, "
    "runbooks, notes), restricted to what this server's API key may read. Use `ask` for a "
    "question that needs an answer with citations; use `search` to find and read passages "
    "yourself. Quote sources by their [n] numbers. If `ask` abstains, the documents do not "
    "answer the question: say so rather than guessing."
)

SEARCH_DESCRIPTION = (
    "Search the document collection and return the most relevant passages, best first, "
    "each with its title, section heading, source file, page and score. Hybrid retrieval "
    "(keyword BM25 + semantic vectors), so both exact terms (product codes, error "
    "messages, names) and paraphrases match. Use it to look things up, to read what the "
    "documents say about a topic, or to find which document covers something. To get a "
    "direct cited answer to a question, use `ask` instead."
)

ASK_DESCRIPTION = (
    "Answer a question from the document collection, citing each sentence's source as [n] "
    "with a numbered list of sources (title › section, file, page). When the documents do "
    "not contain the answer the tool abstains and says so (abstained: true) instead of "
    "guessing. Prefer it for factual questions about the organisation's own documents; "
    "use `search` to browse passages or when you need more context than the answer gives."
)

RESEARCH_DESCRIPTION = (
    "Research a question that needs several passages or several sources: the server plans "
    "sub-questions, searches, judges the evidence, rewrites its queries and switches "
    "between the sources this key may read until the evidence suffices or its budget "
    "(steps, model calls, tokens, time) is spent, then answers with [n] citations across "
    "all it found, or abstains and says what is missing. Slower than `ask` (several "
    "searches); use it for multi-part or multi-hop questions, or when `ask` abstains."
)

_FILTERS_DESCRIPTION = (
    "Optional metadata filters, all of which must match: language (e.g. 'en'), type "
    "('pdf', 'md', 'html', 'docx', 'txt'), source (path or URL prefix), modified_after / "
    "modified_before / ingested_after / ingested_before (ISO date), or any metadata key "
    "set at ingest (e.g. product: 'X-570'). Separate alternatives with '|'."
)

Query = Annotated[str, Field(max_length=MAX_TEXT, description="What to search for.")]
Question = Annotated[str, Field(max_length=MAX_TEXT, description="The question to answer.")]
SearchK = Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to return (1-50).")]
AskK = Annotated[
    int | None,
    Field(ge=1, le=MAX_K, description="How many passages to read (1-50; default 5)."),
]
FilterMap = Annotated[dict[str, str] | None, Field(description=_FILTERS_DESCRIPTION)]
SourceNames = Annotated[
    list[Annotated[str, Field(max_length=64)]] | None,
    Field(
        max_length=50, description="Only these sources (default: every source this key may read)."
    ),
]


# -- output schemas (the structured content; keys as in hit_dict / answer_dict) -----------
class HitOut(TypedDict, total=False):
    """One passage: where it is (title, heading_path, source, page), its text and scores."""

    rank: int
    score: float
    chunk_id: str
    document_id: str
    doc_key: str
    title: str
    source: str
    heading_path: list[str]
    page: int | None
    text: str
    scores: dict[str, float]
    ranks: dict[str, int]
    version: Any
    is_current: Any
    modified_at: Any


class SearchOut(TypedDict):
    """The passages found, best first (``hits`` is empty when none may be read)."""

    query: str
    mode: str
    hits: list[HitOut]
    trace_id: str | None


class CitationOut(TypedDict, total=False):
    """Source ``[number]`` of the answer: the passage it points to."""

    number: int
    title: str
    heading_path: list[str]
    source: str
    page: int | None
    chunk_id: str
    doc_key: str
    quote: str
    text: str | None
    score: float | None
    modified_at: Any
    valid: bool


class ClaimOut(TypedDict, total=False):
    """One sentence of the answer, the sources it cites and whether they support it."""

    text: str
    cited: list[int]
    support: Any
    supported: Any


class AskOut(TypedDict):
    """The answer with [n] markers and its citations; ``abstained`` when the documents
    do not answer the question."""

    question: str
    answer: str
    abstained: bool
    evidence: float
    generator: str
    grounded_ratio: float | None
    prompt_tokens: int | None
    notes: list[str]
    claims: list[ClaimOut]
    citations: list[CitationOut]
    trace_id: str | None


class ResearchOut(AskOut, total=False):
    """The answer of ``ask``, plus what the research did: its decision, stop reason,
    steps, model calls, tokens, seconds and the sources the evidence came from."""

    agent: dict[str, Any]


# -- the key -------------------------------------------------------------------------
def read_api_key(key_file: Path | None) -> tuple[str, str]:
    """The API key and where it came from: the first line of ``key_file``, else the
    ``RAGLINE_API_KEY`` variable (never a command-line value, which ``ps`` would show)."""
    if key_file is not None:
        try:
            lines = Path(key_file).read_text(encoding="utf-8").strip().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the API key file {key_file}: {exc}") from exc
        key = lines[0].strip() if lines else ""
        if not key:
            raise ConfigError(
                f"the API key file {key_file} is empty; put the key on its first line"
            )
        return key, str(key_file)
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise ConfigError(
            f"no API key: pass --api-key-file FILE or set {API_KEY_ENV} "
            "(create a key with: ragline keys create --tenant NAME)"
        )
    return key, API_KEY_ENV


# -- readable text for the model -----------------------------------------------------
def _where(title: str, heading_path: tuple[str, ...] | list[str], source: str, page: Any) -> str:
    place = breadcrumb(title, heading_path) or source
    detail = source + (f", p. {page}" if page else "")
    return f"{place} ({detail})"


def format_hits(query: str, hits: list[dict[str, Any]]) -> str:
    """Numbered passages (hit dicts as shown) with where they come from and their score."""
    if not hits:
        return f'No passages found for "{query}" in the documents this key may read.'
    out = [f'{len(hits)} passage{"s" if len(hits) != 1 else ""} for "{query}", best first:']
    for h in hits:
        out.append("")
        where = _where(h["title"], h["heading_path"], h["source"], h.get("page"))
        out.append(f"[{h['rank']}] {where}")
        out.append(f"score {h['score']:.4f}")
        out.append(str(h.get("text") or "").strip())
    return "\n".join(out)


def format_answer(a: dict[str, Any]) -> str:
    """The answer (an answer dict as shown) with its [n] markers, then ``Sources:`` and
    any notes."""
    out = [str(a["answer"]).strip()]
    if a["citations"]:
        out += ["", "Sources:"]
        out += [
            f"[{c['number']}] {_where(c['title'], c['heading_path'], c['source'], c.get('page'))}"
            for c in a["citations"]
        ]
    if a.get("grounded_ratio") is not None:
        out += ["", f"Grounded: {a['grounded_ratio']:.0%} of claims supported by their sources."]
    if a.get("notes"):
        out += ["", *(f"Note: {n}" for n in a["notes"])]
    return "\n".join(out)


# -- the tools -----------------------------------------------------------------------
def _clean_text(value: str, what: str) -> str:
    if "\x00" in value:
        raise ConfigError(f"the {what} contains a NUL character; send plain text")
    return value


def _clean_filters(filters: dict[str, str] | None) -> dict[str, str] | None:
    if not filters:
        return None
    for k, v in filters.items():
        _clean_text(k, "filter key")
        _clean_text(v, "filter value")
    return filters


class RaglineTools:
    """What the two tools do, as one API key, without the protocol around them."""

    def __init__(self, index: Any, api_key: str) -> None:
        self._index = index
        self._key = api_key
        self._view: PublicView | None = None

    def view(self) -> PublicView:
        """What the tools show: ids encrypted, no server paths, inert answer markup."""
        if self._view is None:
            from .ids import IdCodec

            self._view = PublicView(IdCodec(self._index.admin.installation_secret()))
        return self._view

    def index(self) -> Any:
        """The index (it binds to the collection by itself once a first ingest creates it)."""
        return self._index

    def caller(self) -> ApiKey:
        """The key's current record; an error once the key is revoked."""
        rec = self.index().admin.lookup_key(self._key)
        if rec is None:
            raise ConfigError(
                "this server's API key is no longer valid (revoked or deleted); restart "
                "ragline mcp with a live key (ragline keys create --tenant NAME)"
            )
        return rec

    def search(
        self, query: str, k: int = 10, filters: dict[str, str] | None = None
    ) -> tuple[str, dict[str, Any]]:
        query = _clean_text(query, "query")
        filters = _clean_filters(filters)
        who = self.caller()
        idx = self.index()
        if not query.strip():
            raise ConfigError("the query is empty; pass the text to search for")
        res = idx.search_result(
            Search(
                query, tenant=who.tenant, groups=who.groups, k=k, filters=filters, trace_key=who.id
            )
        )
        data = self.view().out(search_dict(query, res, timings=False), who.tenant)
        return format_hits(query, data["hits"]), data

    def ask(
        self, question: str, k: int | None = None, filters: dict[str, str] | None = None
    ) -> tuple[str, dict[str, Any]]:
        question = _clean_text(question, "question")
        filters = _clean_filters(filters)
        who = self.caller()
        idx = self.index()
        if not question.strip():
            raise ConfigError("the question is empty; pass the question to answer")
        a = idx.ask(
            Ask(
                question,
                tenant=who.tenant,
                groups=who.groups,
                k=k,
                filters=filters,
                trace_key=who.id,
            )
        )
        data = self.view().answer(answer_dict(a), who.tenant)
        return format_answer(data), data

    def research(
        self,
        question: str,
        sources: list[str] | None = None,
        filters: dict[str, str] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        question = _clean_text(question, "question")
        filters = _clean_filters(filters)
        for name in sources or ():
            _clean_text(name, "source name")
        who = self.caller()
        idx = self.index()
        if not question.strip():
            raise ConfigError("the question is empty; pass the question to answer")
        a = idx.research(
            Ask(
                question,
                tenant=who.tenant,
                groups=who.groups,
                sources=sources or None,
                filters=filters,
                trace_key=who.id,
            )
        )
        data = self.view().answer(answer_dict(a), who.tenant)
        text = format_answer(data)
        if a.agent:
            text += (
                f"\n\nResearch: {a.agent.get('steps')} search(es), stopped: "
                f"{a.agent.get('stop_reason')}; sources: {', '.join(a.agent.get('sources', [])) or '-'}"
            )
        return text, data

    def close(self) -> None:
        """Nothing to close: the index is the caller's."""


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _run(fn: Any, *args: Any) -> CallToolResult:
    try:
        text, data = fn(*args)
    except RaglineError as exc:  # the caller's to fix: the model reads the message
        raise ToolError(str(exc)) from exc
    return _result(text, data)


def build_server(tools: RaglineTools, *, name: str = "ragline") -> MCPServer[Any]:
    """An MCP server with the ``search``, ``ask`` and ``research`` tools of ``tools``."""
    from .. import __version__

    server: MCPServer[Any] = MCPServer(
        name, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # Sync functions: the SDK runs them on a worker thread, off the event loop.
    def search(
        query: Query, k: SearchK = 10, filters: FilterMap = None
    ) -> Annotated[CallToolResult, SearchOut]:
        return _run(tools.search, query, k, filters)

    def ask(
        question: Question, k: AskK = None, filters: FilterMap = None
    ) -> Annotated[CallToolResult, AskOut]:
        return _run(tools.ask, question, k, filters)

    server.add_tool(
        search, title="Search documents", description=SEARCH_DESCRIPTION, annotations=read_only
    )

    def research(
        question: Question, sources: SourceNames = None, filters: FilterMap = None
    ) -> Annotated[CallToolResult, ResearchOut]:
        return _run(tools.research, question, sources, filters)

    server.add_tool(
        ask, title="Ask the documents", description=ASK_DESCRIPTION, annotations=read_only
    )
    server.add_tool(
        research,
        title="Research across sources",
        description=RESEARCH_DESCRIPTION,
        annotations=read_only,
    )
    return server


def check_key(index: Any, key: str, origin: str) -> ApiKey:
    """The live record of ``key``, or a ConfigError saying where the bad key came from."""
    rec = index.admin.lookup_key(key)
    if rec is None:
        raise ConfigError(
            f"the API key from {origin} is invalid or revoked; create one with "
            "ragline keys create --tenant NAME [--groups G1,G2] (see: ragline keys list)"
        )
    return rec


def serve_stdio(index: Any, key: str) -> None:
    """Serve the tools over stdin/stdout until the client closes the connection."""
    tools = RaglineTools(index, key)
    try:
        build_server(tools).run("stdio")
    finally:
        tools.close()
