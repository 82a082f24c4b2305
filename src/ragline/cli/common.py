"""What every ``ragline`` command module shares: the ``--json`` flag and its printer."""

from __future__ import annotations

import json
from typing import Any

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")

CHUNKING_CHOICES = ("section", "recursive", "fixed", "semantic", "parent-child")
"""The chunking strategies a collection (or index version) can be built with."""


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def need_serve_extra(what: str, *modules: str) -> None:
    """Fail with the extra to install when a module of the ``serve`` extra is missing."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            from ..core.errors import MissingDependencyError

            raise MissingDependencyError(
                f"{what} needs {exc.name or module}: install the serve extra "
                "(pip install 'ragline[serve]')"
            ) from exc
