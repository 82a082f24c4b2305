"""``ragline eval multihop``: the research loop against one-shot on the multi-hop set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

SHOWN = (
    "gold_recall",
    "answer_recall",
    "part_recall",
    "abstain_precision",
    "abstain_recall",
    "citation_validity",
    "loop_share",
    "steps_median",
    "model_calls_median",
    "tokens_median",
    "latency_ms_median",
)


def render(result: dict[str, Any]) -> str:
    modes = list(result["modes"])
    lines = [f"generator {result['generator']}", f"{'':22}" + "".join(f"{m:>12}" for m in modes)]
    for key in SHOWN:
        vals = [result["modes"][m].get(key) for m in modes]
        lines.append(
            f"{key:22}" + "".join(f"{'n/a' if v is None else f'{v:.4g}':>12}" for v in vals)
        )
    for m in modes:
        lines.append(f"stop reasons ({m}): {result['modes'][m]['stop_reasons']}")
    return "\n".join(lines)


def add_commands(group: click.Group) -> None:
    @group.command("multihop")
    @click.option(
        "--questions",
        default="eval/multihop/questions.jsonl",
        show_default=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
    )
    @click.option(
        "--data",
        "data_root",
        default="../shared/data",
        show_default=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Holds squad2-dev/passages.jsonl and documents/.",
    )
    @click.option(
        "--agent",
        "modes",
        multiple=True,
        type=click.Choice(["plain", "off", "auto", "on"]),
        help="Modes to compare (default: plain, off, on); plain = one-shot over the SQuAD "
        "collection only, off = one-shot routed between the two sources.",
    )
    @click.option("--limit", default=None, type=int, help="A deterministic sample of N questions.")
    @click.option("--generator", default=None, help="extractive (default) or an LLM spec.")
    @click.option("--max-steps", default=None, type=int, help="Agent step budget.")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object (with rows).")
    @click.pass_obj
    def eval_multihop(
        obj: Any,
        questions: Path,
        data_root: Path,
        modes: tuple[str, ...],
        limit: int | None,
        generator: str | None,
        max_steps: int | None,
        as_json: bool,
    ) -> None:
        """Agent vs one-shot on a multi-hop set: gold passage recall, answer recall,
        abstention, citations, steps, model calls, tokens, latency."""
        from ..evaluate.multihop import evaluate_multihop

        if not obj.collection:
            obj.collection = "mh-squad"
        overrides: dict[str, Any] = {}
        if generator:
            overrides["generator"] = generator
        if max_steps:
            overrides["agent_max_steps"] = max_steps
        index = obj.index(**overrides)
        result = evaluate_multihop(
            index,
            questions,
            data_root / "squad2-dev" / "passages.jsonl",
            data_root / "documents",
            modes=modes or ("plain", "off", "on"),
            limit=limit,
        )
        if as_json:
            click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            click.echo(render(result))
