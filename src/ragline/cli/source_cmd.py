"""``ragline source``: declare collections sources the agent may route to."""

from __future__ import annotations

from typing import Any

import click

from .common import echo_json as _echo_json
from .common import json_option as _json


@click.group("source")
def source_group() -> None:
    """Sources for the research loop (ask --agent): collections with a description the
    router reads, and the groups that may route to them. Documents keep their own
    permissions inside every source."""


@source_group.command("declare")
@click.argument("name")
@click.option(
    "--description", "-d", default="", help="What the source holds (the router reads it)."
)
@click.option(
    "--groups", default="", help="Comma-separated groups that may route to it (default: everyone)."
)
@_json
@click.pass_obj
def source_declare(obj: Any, name: str, description: str, groups: str, as_json: bool) -> None:
    """Declare collection NAME a source (again: change its description and groups)."""
    d = obj.index().declare_source(name, description, groups=groups)
    if as_json:
        _echo_json(d)
    else:
        who = ", ".join(d["groups"]) or "everyone"
        click.echo(f"source {d['name']} declared (routable by {who})")


@source_group.command("list")
@click.option("--tenant", default="default", show_default=True)
@click.option("--groups", default="", help="List what a caller of these groups may route to.")
@_json
@click.pass_obj
def source_list(obj: Any, tenant: str, groups: str, as_json: bool) -> None:
    """The sources a caller may route to (the collection itself first)."""
    rows = obj.index().sources(tenant=tenant, groups=groups)
    if as_json:
        _echo_json({"sources": rows})
        return
    for r in rows:
        click.echo(f"{r['name']:<24} {r['chunks']:>8} chunks  {r['description'] or '-'}")


@source_group.command("remove")
@click.argument("name")
@click.pass_obj
def source_remove(obj: Any, name: str) -> None:
    """Stop routing to NAME (the collection itself stays)."""
    obj.index().remove_source(name)
    click.echo(f"source {name} removed")
