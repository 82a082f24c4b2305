"""``ragline index``: versions of a collection's index — build, compare, activate, roll back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .common import CHUNKING_CHOICES
from .common import echo_json as _echo_json
from .common import json_option as _json


@click.group("index")
def index_group() -> None:
    """Index versions: build one beside the live version (another embedder or chunking),
    evaluate and compare them, then switch atomically (and back)."""


@index_group.command("list")
@_json
@click.pass_obj
def index_list(obj: Any, as_json: bool) -> None:
    """The collection's index versions and which one is active."""
    index = obj.index()
    rows = [v.to_dict(*index.admin.counts(v.collection.id)) for v in index.admin.versions()]
    if as_json:
        _echo_json({"collection": index.settings.collection, "versions": rows})
        return
    if not rows:
        click.echo("no index yet (ingest documents first)")
    for r in rows:
        mark = "*" if r["state"] == "active" else " "
        click.echo(
            f"{mark} v{r['version']:<3} {r['state']:<8} {r['embedder']:<34} {r['chunker']:<28} "
            f"{r['documents']:>7} docs {r['chunks']:>8} chunks"
        )


@index_group.command("build")
@click.option(
    "--embedder",
    default=None,
    help="minilm, e5, onnx:DIR, openai:MODEL@URL (default: the live one).",
)
@click.option(
    "--chunking",
    type=click.Choice(CHUNKING_CHOICES),
    default=None,
    help="Chunking strategy (default: the live one).",
)
@click.option(
    "--language",
    default=None,
    help="Default analyzer language for BM25 (e.g. english, hungarian; default: the live one).",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar (default: on a terminal)."
)
@_json
@click.pass_obj
def index_build(
    obj: Any,
    embedder: str | None,
    chunking: str | None,
    language: str | None,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Build a new version from the stored documents while the live one keeps serving.
    Interrupted? Run the same command again: it resumes without re-embedding."""
    from ..rebuild import build_version
    from .main import _progress_bar

    index = obj.index()
    total = index.admin.counts(index.collection.id)[0] if index.collection else 0
    bar, on_progress, _on_stage = _progress_bar(total, progress)
    try:
        result = build_version(
            index, embedder=embedder, chunking=chunking, language=language, on_progress=on_progress
        )
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        _echo_json(result)
    else:
        click.echo(
            f"version {result['version']} ({result['collection']}): {result['state']}; "
            f"{result['added']} added, {result['unchanged']} already built, "
            f"{result['deleted']} removed, {result['embedded']} chunks embedded, "
            f"{result['cached']} from the cache"
        )
        for f in result["failed"]:
            click.echo(f"  failed: {f['source']}: {f['reason']}", err=True)
        if result["state"] == "ready":
            click.echo(f"activate it with: ragline index activate {result['version']}")
    if result["failed"]:
        raise SystemExit(1)


@index_group.command("activate")
@click.argument("version", type=int)
@click.option("--force", is_flag=True, help="Even if it lags the live version.")
@_json
@click.pass_obj
def index_activate(obj: Any, version: int, force: bool, as_json: bool) -> None:
    """Make VERSION the one that answers queries (one transaction)."""
    v = obj.index().admin.activate(version, force=force)
    _done(v, as_json)


@index_group.command("rollback")
@_json
@click.pass_obj
def index_rollback(obj: Any, as_json: bool) -> None:
    """Re-activate the version that was active before the current one."""
    _done(obj.index().admin.rollback(), as_json)


def _done(v: Any, as_json: bool) -> None:
    if as_json:
        _echo_json(v.to_dict())
    else:
        click.echo(f"active: version {v.version} ({v.collection.embedder}, {v.collection.chunker})")


@index_group.command("drop")
@click.argument("version", type=int)
@_json
@click.pass_obj
def index_drop(obj: Any, version: int, as_json: bool) -> None:
    """Delete an inactive version and everything stored in it."""
    obj.index().admin.drop(version)
    if as_json:
        _echo_json({"dropped": version})
    else:
        click.echo(f"dropped version {version}")


@index_group.command("compact")
@_json
@click.pass_obj
def index_compact(obj: Any, as_json: bool) -> None:
    """Rewrite the tables that hold document text, so that no byte of a deleted or purged
    document stays in the database files (what purge does at once unless purge_rewrite is
    false). Queries wait while a table is rewritten: run it off-peak."""
    from ..admin import Admin
    from ..core.settings import Settings

    # the database alone: no model to load, whatever the collections were built with
    s = Settings.resolve(obj.settings_file, data_dir=obj.data_dir, collection=obj.collection)
    admin = Admin.open(s)
    try:
        out = admin.erase_dead_rows()
    finally:
        admin.close()
    if as_json:
        _echo_json(out)
    else:
        click.echo(f"tables rewritten: {', '.join(out['rewritten'])}; WAL {out['wal']}")


@index_group.command("tops")
@click.option("--seconds", type=float, default=None, help="Stop after this long (default: all).")
@_json
@click.pass_obj
def index_tops(obj: Any, seconds: float | None, as_json: bool) -> None:
    """Compute the BM25 tops of the long lists that have none (short queries decide from
    them; an ingest refreshes the lists it changed within a tenth of its time, so after an
    upgrade, deletes or a large ingest some may be left). Safe while ingests run."""
    from ..admin import Admin
    from ..core.settings import Settings

    s = Settings.resolve(obj.settings_file, data_dir=obj.data_dir, collection=obj.collection)
    admin = Admin.open(s)
    try:
        out = admin.refresh_bm25_tops(seconds=seconds)
    finally:
        admin.close()
    if as_json:
        _echo_json(out)
    else:
        click.echo(f"BM25 lists given tops: {out['lists']} in {out['seconds']} s")


@index_group.command("compare")
@click.argument("a", type=int)
@click.argument("b", type=int)
@click.option(
    "--beir",
    "beir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A BEIR dataset folder (test split); the collection must hold its corpus.",
)
@click.option(
    "--questions",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A golden questions file (JSON lines) over the collection's documents.",
)
@click.option("--limit", type=int, default=None, help="Only the first N queries.")
@_json
@click.pass_obj
def index_compare(
    obj: Any,
    a: int,
    b: int,
    beir: Path | None,
    questions: Path | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Evaluate versions A and B on the same queries; print each metric's difference (B − A)
    with a paired randomization test's p-value."""
    from ..core.errors import ConfigError
    from ..evaluate.compare import beir_run, compare_runs, golden_run, render_comparison

    if (beir is None) == (questions is None):
        raise ConfigError("give exactly one of --beir DIR or --questions FILE")
    base = obj.index()
    runs = []
    qrels: Any = None
    for number in (a, b):
        idx = base.pinned(number, traces=False)
        try:
            run, qrels = beir_run(idx, beir, limit=limit) if beir else golden_run(idx, questions)  # type: ignore[arg-type]
        finally:
            idx.close()
        runs.append(run)
    result = compare_runs(runs[0], runs[1], qrels)
    if as_json:
        _echo_json({"a": a, "b": b, "metrics": result})
    else:
        click.echo(render_comparison(result, a, b))
