"""``ragline eval``: measure retrieval on labelled data."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from .common import CHUNKING_CHOICES

_embedder = click.option(
    "--embedder",
    default=None,
    help="Embedding model of the evaluation collection: minilm, e5, onnx:DIR, openai:MODEL@URL "
    "(default: auto). Each embedder gets its own collection.",
)
_chunking = click.option(
    "--chunking",
    type=click.Choice(CHUNKING_CHOICES),
    default=None,
    help="Chunking strategy (default section). Each strategy gets its own collection.",
)


_explain = click.option(
    "--explain",
    is_flag=True,
    help="Store a trace per query and blame each missed gold item on a stage: not-chunked, "
    "not-retrieved, ranked-out (or, for qa, ignored-by-generator).",
)
_explain_k = click.option(
    "--explain-k",
    type=click.IntRange(min=1),
    default=None,
    help="With --explain: a gold item is missed when it is not in the top N "
    "(default: --k for retrieval, 10 for golden).",
)
_index_version = click.option(
    "--index-version",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate this index version of the evaluation collection (1: the collection as "
    "first built; see `ragline index list`), whichever version is active.",
)


def _open(obj: Any, index_version: int | None, overrides: dict[str, Any]) -> Any:
    """The evaluation index; with ``index_version``, pinned to that version of the
    evaluation collection (its physical collection ``version_collection_name(name, V)``),
    whichever version is active."""
    index = obj.index(**overrides)
    if index_version is None:
        return index
    if index_version == 1 and not index.admin.versions():
        return index  # never versioned: version 1 is the collection itself
    version = index.admin.version(index_version)  # NotFoundError lists the versions
    if index.collection is not None and index.collection.id == version.collection.id:
        return index
    # the version's own embedder and chunking, as `ragline index compare` opens it
    pinned = index.pinned(index_version)
    index.close()
    obj._index = pinned  # closed by the CLI group like any index
    return pinned


def _explain_text(stages: dict[str, dict[str, Any]], head: str) -> str:
    from ..evaluate.explain import render_summary

    return render_summary(
        {m: r["explain"] for m, r in stages.items() if "explain" in r}, headline=head
    )


def _overrides(embedder: str | None, chunking: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if embedder:
        out["embedder"] = embedder
    if chunking:
        out["chunking"] = chunking
    return out


def _variant(name: str, embedder: str | None, chunking: str | None) -> str:
    """The evaluation collection for an embedder/strategy pair: ``beir-scifact``,
    ``beir-scifact-e5``, ``beir-scifact-parent-child``, …"""
    parts = [name]
    if embedder and embedder != "auto":
        parts.append("".join(c if c.isalnum() else "-" for c in embedder.split("@")[0])[:20])
    if chunking and chunking != "section":
        parts.append(chunking)
    return "-".join(parts)[:64]


@click.group("eval")
def eval_group() -> None:
    """Evaluate retrieval and answers on labelled sets, stage by stage (--explain: where each miss happened)."""


_report = click.option(
    "--report",
    "report_file",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write an HTML report with a small chart per stage.",
)
HEADLINE = ("ndcg@10", "recall@5", "recall@10", "recall@100", "precision@5", "mrr@10", "map@100")


@eval_group.command("retrieval")
@click.option(
    "--beir",
    "beir_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option("--split", default="test", show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["bm25", "vector", "hybrid", "rerank", "all"]),
    default="hybrid",
    show_default=True,
    help="One stage, or all: bm25, vector, hybrid (and rerank when a reranker is configured).",
)
@click.option("--k", "k", default=10, show_default=True, help="Cut-off of the headline metrics.")
@click.option(
    "--depth", default=100, show_default=True, help="Candidates per leg fused by RRF (hybrid)."
)
@click.option(
    "--limit", default=None, type=int, help="Evaluate only the first N queries (sorted by id)."
)
@_embedder
@_chunking
@_index_version
@_explain
@_explain_k
@_report
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def eval_retrieval(
    obj: Any,
    beir_dir: Path,
    split: str,
    mode: str,
    k: int,
    depth: int,
    limit: int | None,
    embedder: str | None,
    chunking: str | None,
    index_version: int | None,
    explain: bool,
    explain_k: int | None,
    report_file: Path | None,
    as_json: bool,
) -> None:
    """Ingest a BEIR corpus into its own collection (reused on later runs) and score a mode."""
    from ..evaluate.beir import load_beir
    from ..evaluate.retrieval import beir_collection_name, evaluate_beir

    name = load_beir(beir_dir, split).name
    if not obj.collection:
        obj.collection = _variant(beir_collection_name(name), embedder, chunking)
    index = _open(obj, index_version, _overrides(embedder, chunking))
    modes = [mode]
    if mode == "all":
        modes = ["bm25", "vector", "hybrid"] + (["rerank"] if index.settings.reranker else [])
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(unit="doc", file=sys.stderr, desc="ingest", dynamic_ncols=True)
    t0 = time.perf_counter()
    chunks = 0

    def on_progress(_n: str, c: int, _pages: int = 0) -> None:
        nonlocal chunks
        chunks += c
        if bar is not None:
            bar.set_postfix_str(
                f"{chunks} chunks, {chunks / max(time.perf_counter() - t0, 1e-9):.1f} chunks/s"
            )
            bar.update(1)

    stages: dict[str, dict[str, Any]] = {}
    for m in modes:
        stages[m] = evaluate_beir(
            index,
            beir_dir,
            split=split,
            mode=m,
            k=k,
            depth=depth,
            limit=limit,
            on_progress=on_progress,
            explain_k=(explain_k or k) if explain else None,
        )
    if bar is not None:
        bar.close()
    result = dict(stages["hybrid" if mode == "all" else mode])
    if mode == "all":
        result["mode"] = "all"
        result["stages"] = stages
    if report_file is not None:
        from ..evaluate.report import render_report

        report_file.write_text(
            render_report(
                f"ragline eval retrieval: {result['dataset']} ({split})",
                {**result, "stages": stages},
            ),
            encoding="utf-8",
        )
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
        return
    click.secho(
        f"{result['dataset']} ({split}, {result['queries']} queries), "
        f"collection {result['collection']} ({result['embedder']}, {result['chunker']})",
        bold=True,
    )
    click.echo("  " + "metric".ljust(12) + "".join(m.rjust(10) for m in modes))
    for key in HEADLINE:
        click.echo("  " + key.ljust(12) + "".join(f"{stages[m][key]:10.4f}" for m in modes))
    for m in modes:
        click.echo(
            f"  {m}: search p50 {stages[m]['search_p50_ms']} ms, p95 {stages[m]['search_p95_ms']} ms"
        )
    if explain:
        click.echo(_explain_text(stages, "hybrid" if mode == "all" else mode))
    if report_file is not None:
        click.echo(f"  report: {report_file}")


@eval_group.command("golden")
@click.option(
    "--docs",
    "docs",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of the documents the questions are about.",
)
@click.option(
    "--questions",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON lines: {"id", "question", "relevant": [{"source", "quote"}], "answerable"}.',
)
@click.option("--depth", default=100, show_default=True, help="Results per stage (and RRF depth).")
@_embedder
@_chunking
@_index_version
@_explain
@_explain_k
@_report
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def eval_golden(
    obj: Any,
    docs: Path,
    questions: Path,
    depth: int,
    embedder: str | None,
    chunking: str | None,
    index_version: int | None,
    explain: bool,
    explain_k: int | None,
    report_file: Path | None,
    as_json: bool,
) -> None:
    """Score BM25, vector and hybrid retrieval on a golden question set over real documents."""
    from ..evaluate.golden import evaluate_golden, render_table

    if not obj.collection:
        base = "".join(c if c.isalnum() or c in "_.-" else "-" for c in docs.resolve().name)
        obj.collection = _variant("golden-" + base[:40], embedder, chunking)
    index = _open(obj, index_version, _overrides(embedder, chunking))
    result = evaluate_golden(
        index, docs, questions, depth=depth, explain_k=(explain_k or 10) if explain else None
    )
    result.update(embedder=index.collection.embedder, chunker=index.collection.chunker)
    if report_file is not None:
        from ..evaluate.report import render_report

        report_file.write_text(
            render_report(f"ragline eval golden: {questions.name} over {docs.name}", result),
            encoding="utf-8",
        )
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(render_table(result))


@eval_group.command("qa")
@click.option(
    "--passages",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON lines: {_id, title, text}.",
)
@click.option(
    "--questions",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON lines: {id, question, passage_id, is_impossible, answers}.",
)
@click.option("--limit", default=None, type=int, help="A deterministic sample of N questions.")
@click.option(
    "--generator",
    default=None,
    help="extractive (default), local[:NAME], openai:MODEL@URL, anthropic:MODEL or llamacpp:PATH.gguf.",
)
@_embedder
@_index_version
@_explain
@click.option(
    "--agent",
    type=click.Choice(["auto", "on"]),
    default=None,
    help="Also answer through the research loop in this mode and report it beside one-shot.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def eval_qa(
    obj: Any,
    passages: Path,
    questions: Path,
    limit: int | None,
    generator: str | None,
    embedder: str | None,
    index_version: int | None,
    explain: bool,
    agent: str | None,
    as_json: bool,
) -> None:
    """Score answers end to end: recall, token F1, abstention, citations, faithfulness."""
    from ..evaluate.qa import evaluate_qa

    if not obj.collection:
        base = "".join(c if c.isalnum() or c in "_.-" else "-" for c in passages.parent.name)
        obj.collection = _variant("qa-" + base[:40], embedder, None)
    overrides = _overrides(embedder, None)
    if generator:
        overrides["generator"] = generator
    index = _open(obj, index_version, overrides)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(unit="q", file=sys.stderr, desc="ask", dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(1)

    index.settings = index.settings.model_copy(update={"agent": "off"})
    result = evaluate_qa(
        index, passages, questions, limit=limit, on_progress=progress, explain=explain
    )
    if agent:  # the same questions through the research loop (Index.ask follows the setting)
        index.settings = index.settings.model_copy(update={"agent": agent})
        result = {**result, f"agent_{agent}": evaluate_qa(index, passages, questions, limit=limit)}
    if bar is not None:
        bar.close()
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
        return
    click.secho(
        f"{result['questions']} questions ({result['unanswerable']} unanswerable), "
        f"generator {result['generator']}",
        bold=True,
    )
    for key in (
        "answer_recall",
        "token_f1",
        "abstain_precision",
        "abstain_recall",
        "abstain_f1",
        "citation_validity",
        "faithfulness",
        "grounded_ratio",
    ):
        value = result[key]
        line = f"  {key:18} {'n/a' if value is None else f'{value:.4f}'}"
        if agent:
            other = result[f"agent_{agent}"][key]
            line += f"   agent {agent}: {'n/a' if other is None else f'{other:.4f}'}"
        click.echo(line)
    if agent:
        click.echo(
            f"  {'answer_ms_mean':18} {result['answer_ms_mean']}   agent {agent}: "
            f"{result[f'agent_{agent}']['answer_ms_mean']}"
        )
    else:
        click.echo(f"  {'answer_ms_mean':18} {result['answer_ms_mean']}")
    if result.get("model_calls"):
        click.echo(
            f"  model calls {result['model_calls']}: prompt {result['prompt_tokens_mean']} and "
            f"reply {result['completion_tokens_mean']} tokens on average, "
            f"{result['generation_s_mean']} s each, {result['tokens_per_s']} generated tokens/s "
            f"({result['prompt_and_reply_tokens_per_s']} prompt + reply tokens/s)"
        )
    if explain:
        click.echo(_explain_text({"qa": result}, "qa"))


from .eval_agent import add_commands  # noqa: E402

add_commands(eval_group)
