"""``ragline mcp``: the MCP server on stdio (the tools live in ragline.serve.mcp_server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .common import need_serve_extra


@click.command("mcp")
@click.option(
    "--api-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File whose first line is the API key to run as (or set RAGLINE_API_KEY). "
    "The key's tenant and groups decide what the tools may read.",
)
@click.pass_obj
def mcp_command(obj: Any, api_key_file: Path | None) -> None:
    """Serve the search and ask tools to an MCP client over stdio.

    The server runs as one API key (create one with: ragline keys create --tenant NAME
    --groups G1,G2): every tool call reads only that key's tenant and groups, as the
    HTTP API does, and revoking the key stops it at once. The key is never a command-line
    value (other users could read it with ps). A client configuration, e.g. Claude
    Desktop's claude_desktop_config.json:

    \b
      {"mcpServers": {"ragline": {
         "command": "ragline", "args": ["mcp"],
         "env": {"RAGLINE_API_KEY": "rl_...",
                 "RAGLINE_DATABASE_URL": "postgresql://..."}}}}

    stdout carries the protocol; messages go to stderr.
    """
    need_serve_extra("the MCP server", "mcp")
    from ..serve.mcp_server import check_key, read_api_key, serve_stdio

    key, origin = read_api_key(api_key_file)
    index = obj.index()
    rec = check_key(index, key, origin)
    groups = ",".join(rec.groups) or "-"
    click.echo(
        f"ragline mcp: collection {index.settings.collection}, tenant {rec.tenant}, "
        f"groups {groups}; serving search and ask on stdio",
        err=True,
    )
    serve_stdio(index, key)
