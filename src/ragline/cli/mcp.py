"""``ragline mcp``: the MCP server on stdio (filled in by ragline.serve.mcp_server)."""

from __future__ import annotations

import click


@click.command("mcp")
def mcp_command() -> None:
    """Serve the search and ask tools over MCP (stdio)."""
    raise click.ClickException("not built yet")
