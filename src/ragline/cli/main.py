"""The ``ragline`` command. Readable output by default, one JSON document with ``--json``."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..core.errors import NotFoundError, RaglineError
from ..core.requests import AskRequest, SearchRequest, groups_of
from ..core.trace import NOTHING_INGESTED, answer_dict, search_dict
from ..core.types import breadcrumb
from .common import CHUNKING_CHOICES
from .common import echo_json as _echo_json
from .common import json_option as _json

EXIT_FAILURES = 1


class _Ctx:
    def __init__(
        self, data_dir: str | None, collection: str | None, settings_file: str | None
    ) -> None:
        self.data_dir = data_dir
        self.collection = collection
        self.settings_file = settings_file
        self._index: Any = None

    def index(self, **overrides: Any) -> Any:
        if self._index is None:
            from ..core.settings import Settings
            from ..index import Index

            s = Settings.resolve(
                self.settings_file, data_dir=self.data_dir, collection=self.collection, **overrides
            )
            self._index = Index(s)
        return self._index

    def data_path(self) -> Path:
        from ..core.settings import Settings

        return Path(self.data_dir) if self.data_dir else Settings.load(self.settings_file).data_dir


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RaglineError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(EXIT_FAILURES)
        finally:
            obj = ctx.obj
            if isinstance(obj, _Ctx) and obj._index is not None:
                obj._index.close()


@click.group(cls=_Group)
@click.option(
    "--data-dir",
    envvar="RAGLINE_DATA_DIR",
    default=None,
    help="Data directory of the embedded PostgreSQL (default ./.ragline). "
    "Ignored when RAGLINE_DATABASE_URL is set, unless given explicitly.",
)
@click.option(
    "--collection",
    "-c",
    envvar="RAGLINE_COLLECTION",
    default=None,
    help="Collection name (default 'default').",
)
@click.option(
    "--settings",
    "settings_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="A JSON settings file (see ragline.core.settings.Settings).",
)
@click.version_option(package_name="ragline")
@click.pass_context
def cli(
    ctx: click.Context, data_dir: str | None, collection: str | None, settings_file: str | None
) -> None:
    """ragline: cited answers from your own documents, on PostgreSQL + pgvector.

    Set RAGLINE_DATABASE_URL=postgresql://... to use an existing PostgreSQL (>= 15, with
    pgvector >= 0.8); otherwise an embedded server is started under the data directory
    and left running (stop it with `ragline server stop`).
    """
    ctx.obj = _Ctx(data_dir, collection, settings_file)


_tenant = click.option(
    "--tenant",
    default="default",
    show_default=True,
    help="Tenant the documents belong to / the caller is in.",
)
_groups = click.option(
    "--groups", default="", help="Comma-separated groups (who may read / who is asking)."
)

_filter = click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata filter, repeatable: language=hu, type=pdf, source=/docs/hr/, modified_after=2024-01-01, "
    "or any metadata key (product=X-570). Applied inside both search legs.",
)


def _progress_bar(
    total: int | None, show: bool | None
) -> tuple[Any, Callable[[str, int], None], Callable[[str, int], None]]:
    """A tqdm bar on stderr (files written; parsed, embedded/chunks found, chunks/s) and
    the two callbacks that move it: one per document written, one per stage count."""
    if not (show if show is not None else sys.stderr.isatty()):
        return None, lambda _n, _c, _p=0: None, lambda _s, _n: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="file", file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    counts = {"parsed": 0, "chunks": 0, "embedded": 0, "written_chunks": 0, "pages": 0}
    lock = threading.Lock()  # the writer thread reports writes, the ingest thread the rest

    def show_counts() -> None:
        dt = max(time.perf_counter() - t0, 1e-9)
        bar.set_postfix_str(
            f"parsed {counts['parsed']}, embedded {counts['embedded']}/{counts['chunks']} "
            f"chunks ({counts['embedded'] / dt:.1f}/s), {counts['pages']} pages",
            refresh=True,
        )

    def on_stage(stage: str, n: int) -> None:
        with lock:
            counts[stage] = counts.get(stage, 0) + n
            show_counts()

    def on_progress(_name: str, n: int, p: int = 0) -> None:
        with lock:
            counts["written_chunks"] += n
            counts["pages"] += p
            show_counts()
            bar.update(1)

    return bar, on_progress, on_stage


def _print_report(report: Any, as_json: bool) -> None:
    d = report.to_dict()
    if as_json:
        _echo_json(d)
        return
    extra = ""
    if "renamed" in d:
        extra = f", {len(d['renamed'])} renamed, {len(d['deleted'])} deleted"
    click.echo(
        f"{len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged{extra}, "
        f"{len(report.failed)} failed, {len(report.skipped)} skipped; {report.chunks} chunks "
        f"({report.embedded} embedded, {report.cached} from cache) in {report.seconds:.1f}s "
        f"({d['chunks_per_s']} chunks/s)"
    )
    for w in report.warnings:
        click.secho(f"  warning: {w}", fg="yellow", err=True)
    for sk in report.skipped:
        click.echo(f"  skipped: {sk.source}: {sk.reason}", err=True)
    for f in report.failed:
        click.secho(f"  failed: {f.source}: {f.reason}", fg="red", err=True)


_meta = click.option(
    "--meta",
    "meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata stored on each document (repeatable).",
)


def _meta_dict(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair or not pair.split("=", 1)[0].strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--meta")
        k, v = pair.split("=", 1)
        out[k.strip()] = v.strip()
    return out


_chunking = click.option(
    "--chunking",
    type=click.Choice(CHUNKING_CHOICES),
    default=None,
    help="Chunking strategy of a new collection (default section); an existing collection "
    "keeps its own, and asking for another is an error.",
)


def _chunking_overrides(chunking: str | None) -> dict[str, Any]:
    return {"chunking": chunking} if chunking else {}


_progress = click.option(
    "--progress/--no-progress", default=None, help="Progress bar (default: on a terminal)."
)


_enqueue = click.option(
    "--enqueue",
    is_flag=True,
    help="Queue the work for `ragline worker` processes instead of doing it here "
    "(prints the job; `ragline status` shows the queue, GET /v1/jobs a job's progress).",
)


def _group_list(groups: str) -> list[str]:
    return [g.strip() for g in groups.split(",") if g.strip()]


def _print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _echo_json(job)
    else:
        click.echo(f"queued job {job['id']} ({job['kind']}, {job['total']} file(s))")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_tenant
@_groups
@_meta
@click.option(
    "--vectors",
    "vectors_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Ingest chunks with precomputed vectors from a JSON Lines file (one document per "
    "line: key, title, chunks[{text, vector}], …); the whole file is validated first. The "
    "vectors must come from the collection's embedder (--embedder / RAGLINE_EMBEDDER).",
)
@click.option(
    "--pdf-password",
    default=None,
    help="Password for protected PDFs (or set RAGLINE_PDF_PASSWORD; prefer the variable: "
    "command lines are visible to other users).",
)
@_chunking
@_enqueue
@_json
@_progress
@click.pass_obj
def ingest(
    obj: _Ctx,
    paths: tuple[Path, ...],
    tenant: str,
    groups: str,
    meta: tuple[str, ...],
    vectors_file: Path | None,
    pdf_password: str | None,
    chunking: str | None,
    enqueue: bool,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Ingest files and folders (Markdown, text, HTML, PDF, DOCX, images). Unchanged files are skipped."""

    if vectors_file is not None:
        if paths:
            raise click.UsageError("give either PATHS or --vectors FILE, not both")
        index = obj.index(**_chunking_overrides(chunking))
        report = index.ingest_vectors_file(
            vectors_file, tenant=tenant, groups=groups, metadata=_meta_dict(meta)
        )
        _print_report(report, as_json)
        sys.exit(EXIT_FAILURES if report.failed else 0)
    if not paths:
        raise click.UsageError("give the files or folders to ingest (or --vectors FILE)")

    index = obj.index(**_chunking_overrides(chunking))
    if enqueue:
        from ..ingest.queue import enqueue_paths

        _print_job(enqueue_paths(index, paths, tenant=tenant, groups=_group_list(groups)), as_json)
        return
    bar, on_progress, on_stage = _progress_bar(None, progress)
    report = index.ingest(
        paths,
        on_total=(lambda n: bar.reset(total=n)) if bar is not None else None,
        pdf_password=pdf_password,
        tenant=tenant,
        groups=groups,
        on_progress=on_progress,
        on_stage=on_stage,
        metadata=_meta_dict(meta),
    )
    if bar is not None:
        bar.close()
    _print_report(report, as_json)
    if report.failed:
        sys.exit(EXIT_FAILURES)


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@_tenant
@_groups
@_meta
@_enqueue
@_json
@_progress
@click.pass_obj
def sync(
    obj: _Ctx,
    folder: Path,
    tenant: str,
    groups: str,
    meta: tuple[str, ...],
    enqueue: bool,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Make the index equal FOLDER: add new, re-index changed, delete removed, move renamed files."""
    index = obj.index()
    if enqueue:  # the worker must read FOLDER at the same path
        from ..ingest.queue import enqueue_sync

        job = enqueue_sync(index, tenant, _group_list(groups), folder.expanduser().resolve())
        _print_job(job, as_json)
        return
    bar, on_progress, on_stage = _progress_bar(None, progress)
    report = index.sync(
        folder,
        tenant=tenant,
        groups=groups,
        on_progress=on_progress,
        on_stage=on_stage,
        metadata=_meta_dict(meta),
    )
    if bar is not None:
        bar.close()
    _print_report(report, as_json)
    if report.failed:
        sys.exit(EXIT_FAILURES)


@cli.command()
@click.argument("query")
@_tenant
@_groups
@click.option("--k", "-k", default=10, show_default=True, help="Number of results.")
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector", "rerank"]),
    default=None,
    help="Default: rerank when a reranker is configured, else hybrid.",
)
@click.option(
    "--include-history", is_flag=True, help="Also search old versions (see keep_versions)."
)
@_filter
@_json
@click.pass_obj
def search(
    obj: _Ctx,
    query: str,
    tenant: str,
    groups: str,
    k: int,
    mode: str | None,
    include_history: bool,
    filters: tuple[str, ...],
    as_json: bool,
) -> None:
    """Search the chunks the caller may read (BM25 + vector, fused with RRF)."""
    from ..core.filters import Filters

    index = obj.index()
    res = index.search_result(
        SearchRequest(
            query,
            tenant=tenant,
            groups=groups_of(groups),
            k=k,
            mode=mode,
            include_history=include_history,
            filters=Filters.from_pairs(filters),
        )
    )
    if NOTHING_INGESTED in res.notes:  # a script should notice: exit 1
        raise NotFoundError(
            f"collection {index.settings.collection!r} is empty: ingest documents first "
            "(with embedder 'auto' the model is chosen from the first documents)"
        )
    if as_json:
        _echo_json(search_dict(query, res))
        return
    if not res.hits:
        click.echo("no results")
    for h in res.hits:
        where = breadcrumb(h.title, h.heading_path)
        click.secho(f"[{h.rank}] {where}  ({res.mode} {h.score:.4f})", bold=True)
        click.echo(f"    {h.source}")
        text = " ".join(h.text.split())
        click.echo(f"    {text[:300]}{'…' if len(text) > 300 else ''}")


@cli.command()
@click.argument("question")
@_tenant
@_groups
@click.option("--k", "-k", default=None, type=int, help="Passages to read (default 5).")
@_filter
@click.option(
    "--generator",
    default=None,
    help="extractive (default, no LLM), local[:NAME] (a model from `ragline models`), "
    "openai:MODEL@URL, anthropic:MODEL or llamacpp:PATH.gguf (or set RAGLINE_GENERATOR).",
)
@click.option(
    "--stream", is_flag=True, help="Print the answer as it is written; sources at the end."
)
@click.option(
    "--multi-query",
    is_flag=True,
    default=None,
    help="Search several rewordings (needs a generator).",
)
@click.option(
    "--decompose", is_flag=True, default=None, help="Split compound questions (needs a generator)."
)
@click.option(
    "--hyde",
    is_flag=True,
    default=None,
    help="Search with a hypothetical answer (needs a generator).",
)
@click.option(
    "--agent",
    type=click.Choice(["off", "auto", "on"]),
    default=None,
    help="The research loop: plan, search, judge, rewrite, switch sources until the evidence "
    "suffices or the budget is spent (auto: only when one-shot evidence is weak or the "
    "question has several parts). Default: the agent setting (off).",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    help="A source the agent may route to (repeatable; default: every source you may read).",
)
@click.option("--max-steps", default=None, type=int, help="Agent: searches per question.")
@_json
@click.pass_obj
def ask(
    obj: _Ctx,
    question: str,
    tenant: str,
    groups: str,
    k: int | None,
    filters: tuple[str, ...],
    generator: str | None,
    stream: bool,
    multi_query: bool | None,
    decompose: bool | None,
    hyde: bool | None,
    agent: str | None,
    sources: tuple[str, ...],
    max_steps: int | None,
    as_json: bool,
) -> None:
    """Answer a question from the documents, citing each sentence's source as [n]."""
    from ..core.filters import Filters
    from ..core.types import Answer

    overrides: dict[str, Any] = {
        name: value
        for name, value in (
            ("generator", generator),
            ("multi_query", multi_query),
            ("decompose", decompose),
            ("hyde", hyde),
            ("agent", agent),
            ("agent_max_steps", max_steps),
        )
        if value
    }
    index = obj.index(**overrides)
    req = AskRequest(
        question, tenant=tenant, groups=groups_of(groups), k=k, filters=Filters.from_pairs(filters)
    )
    if sources and index.settings.agent == "off":
        raise click.UsageError("--source routes the agent: add --agent on (or auto)")
    if index.settings.agent != "off":
        a = index.research(req, agent=index.settings.agent, sources=sources or None)
        if as_json:
            _echo_json(answer_dict(a))
            return
        click.echo(a.text)
    elif stream and not as_json:
        a = None
        shown: list[str] = []
        for item in index.ask_stream(req):
            if isinstance(item, Answer):
                a = item
            else:
                shown.append(item)
                click.echo(item, nl=False)
        click.echo("")
        assert a is not None
        if a.text.strip() != "".join(shown).strip():  # renumbered, marked or dropped claims
            click.secho("\nChecked answer:", bold=True)
            click.echo(a.text)
    else:
        a = index.ask(req)
        if as_json:
            _echo_json(answer_dict(a))
            return
        click.echo(a.text)
    if a.citations:
        click.echo("")
        click.secho("Sources:", bold=True)
        dates = {h.chunk_id: h.metadata.get("modified_at") for h in a.hits}
        for c in a.citations:
            page = f", page {c.page}" if c.page else ""
            date = f", {str(dates[c.chunk_id])[:10]}" if dates.get(c.chunk_id) else ""
            click.echo(f"  [{c.number}] {c.location}{page}{date} — {c.source}")
    if a.grounded_ratio is not None:
        click.echo(f"grounded: {a.grounded_ratio:.0%} of claims supported by their sources")
    for note in a.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    if a.agent:
        ag = a.agent
        click.echo(
            f"agent: {'loop' if ag.get('loop') else 'one-shot'} ({ag.get('reason')}); stop: "
            f"{ag.get('stop_reason')}; steps {ag.get('steps')}, model calls "
            f"{ag.get('model_calls')}, tokens {ag.get('tokens', 0)}; sources: "
            f"{', '.join(ag.get('sources', [])) or '-'}",
            err=True,
        )
    if a.trace_id:
        click.echo(f"trace: ragline trace {a.trace_id}", err=True)


@cli.command()
@click.argument("docs", nargs=-1, required=True)
@_tenant
@_json
@click.pass_obj
def delete(obj: _Ctx, docs: tuple[str, ...], tenant: str, as_json: bool) -> None:
    """Delete documents (by path or document key) and everything derived from them."""
    index = obj.index()
    result = {d: index.delete(d, tenant=tenant) for d in docs}
    missing = [d for d, n in result.items() if n == 0]
    if as_json:
        _echo_json({"deleted": [d for d, n in result.items() if n], "not_found": missing})
    else:
        for d, n in result.items():
            click.echo(f"deleted {d}" if n else f"not found: {d}")
    if missing:
        sys.exit(EXIT_FAILURES)


@cli.command()
@click.argument("docs", nargs=-1, required=True)
@_tenant
@_json
@click.pass_obj
def purge(obj: _Ctx, docs: tuple[str, ...], tenant: str, as_json: bool) -> None:
    """Erase documents for good: every version in every index version, the traces that
    cite them, cached vectors, their names in job records, and every byte of them in the
    database files (the tables are rewritten once, after the last document: this takes
    time in proportion to the collection and makes queries wait meanwhile)."""
    index = obj.index()
    result = {d: index.purge(d, tenant=tenant, erase=False) for d in docs}
    missing = [d for d, r in result.items() if r["versions"] == 0]
    purged = len(missing) < len(docs)
    mb = index.settings.purge_rewrite_max_mb
    erasure = (
        index.admin.erase_dead_rows(max_bytes=None if mb is None else mb << 20)
        if purged and index.settings.purge_rewrite
        else None
    )
    if as_json:
        _echo_json(
            {
                "purged": {d: r for d, r in result.items() if r["versions"]},
                "not_found": missing,
                "erasure": erasure,
            }
        )
    else:
        for d, r in result.items():
            if r["versions"]:
                click.echo(
                    f"purged {d}: {r['versions']} version(s), {r['cache_entries']} cached vector(s)"
                )
            else:
                click.echo(f"not found: {d}")
        if erasure is not None and erasure.get("pending"):
            click.echo(f"erasure pending: {erasure['pending']}")
        elif erasure is not None:
            click.echo(f"tables rewritten: {', '.join(erasure['rewritten'])}; WAL {erasure['wal']}")
        elif purged:
            click.echo("purge_rewrite is off: run `ragline index compact` to erase the bytes")
    if missing:
        sys.exit(EXIT_FAILURES)


@cli.command()
@_json
@click.pass_obj
def status(obj: _Ctx, as_json: bool) -> None:
    """What the index holds (documents, chunks, model, active version, database) and how
    fresh it is (indexing lag, changed, failed and missing sources)."""
    st = obj.index().status()
    if as_json:
        _echo_json(st)
        return
    for key, value in st.items():
        if key in ("freshness", "languages_not_covered"):
            continue
        if key.endswith("_warning"):
            click.secho(f"{'warning':24} {value}", fg="yellow")
            continue
        click.echo(f"{key:24} {value}")
    fresh = st.get("freshness")
    if fresh:
        lag = fresh["lag_seconds"]
        if lag["documents"]:
            click.echo(
                f"{'lag (indexed - modified)':24} p50 {_dur(lag['p50'])}, p90 {_dur(lag['p90'])}, "
                f"max {_dur(lag['max'])} over {lag['documents']} documents"
            )
        oldest = fresh["oldest_pending_change"]
        click.echo(
            f"{'pending changes':24} {fresh['pending_changes']}"
            + (
                f" (oldest: {oldest['source']}, modified {oldest['modified_at'][:19]})"
                if oldest
                else ""
            )
        )
        click.echo(f"{'failed sources':24} {len(fresh['failed_sources'])}")
        for f in fresh["failed_sources"][:10]:
            click.echo(f"  {f['source']}: {f['reason']} ({f['failed_at'][:19]})")
        click.echo(f"{'missing sources':24} {len(fresh['missing_sources'])}")
        for m in fresh["missing_sources"][:10]:
            click.echo(f"  {m}")


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


@cli.command()
@click.option(
    "--embedder",
    default="auto",
    show_default=True,
    help="auto (English first documents: minilm, otherwise e5), minilm, e5, onnx:DIR, openai:MODEL@URL.",
)
@_chunking
@_json
@click.pass_obj
def init(obj: _Ctx, embedder: str, chunking: str | None, as_json: bool) -> None:
    """Create the collection with a chosen embedding model and chunking strategy (both
    fixed for its lifetime)."""
    if chunking and embedder == "auto":
        raise click.UsageError(
            "--chunking needs an explicit --embedder here (auto picks the model from the first "
            "documents); or pass --chunking to the first `ragline ingest` instead"
        )
    st = obj.index(embedder=embedder, **_chunking_overrides(chunking)).status()
    if as_json:
        _echo_json(st)
    else:
        click.echo(
            f"collection {st['collection']}: embedder {st['embedder']}, chunker {st.get('chunker')}"
        )


@cli.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
def parse(file: Path, fmt: str) -> None:
    """Show exactly what ragline extracts from FILE (no database needed)."""
    from ..parse import parse_file
    from ..parse.render import to_dict, to_markdown

    doc = parse_file(file)
    if fmt == "json":
        _echo_json(to_dict(doc))
    else:
        click.echo(to_markdown(doc), nl=False)


@cli.group()
def server() -> None:
    """The embedded PostgreSQL server of the data directory."""


@server.command("start")
@click.pass_obj
def server_start(obj: _Ctx) -> None:
    """Start the embedded server (done automatically on first use)."""
    from ..admin import start_server

    click.echo(start_server(obj.data_path()))


@server.command("stop")
@click.pass_obj
def server_stop(obj: _Ctx) -> None:
    """Stop the embedded server cleanly."""
    from ..admin import stop_server

    click.echo("stopped" if stop_server(obj.data_path()) else "not running")


@server.command("status")
@_json
@click.pass_obj
def server_status(obj: _Ctx, as_json: bool) -> None:
    """Whether the embedded server runs, its pid and connection URI."""
    from ..admin import server_info

    info = server_info(obj.data_path())
    d = {"data_dir": str(info.data_dir), "running": info.running, "pid": info.pid, "uri": info.uri}
    if as_json:
        _echo_json(d)
    else:
        click.echo(f"running (pid {info.pid}) {info.uri}" if info.running else "not running")


from .eval import eval_group  # noqa: E402
from .index_cmd import index_group  # noqa: E402
from .mcp import mcp_command  # noqa: E402
from .models_cmd import models_group  # noqa: E402
from .serve import keys_group, serve_command, trace_command  # noqa: E402
from .source_cmd import source_group  # noqa: E402
from .worker import worker_command  # noqa: E402

cli.add_command(eval_group)
cli.add_command(serve_command)
cli.add_command(keys_group)
cli.add_command(trace_command)
cli.add_command(mcp_command)
cli.add_command(index_group)
cli.add_command(worker_command)
cli.add_command(source_group)
cli.add_command(models_group)


def main() -> None:
    cli(prog_name="ragline")


if __name__ == "__main__":
    main()
