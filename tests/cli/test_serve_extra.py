"""Without the serve extra, `ragline serve` and `ragline mcp` say which extra to install."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from ragline.cli.main import cli


@pytest.mark.parametrize(
    ("command", "module"), [("serve", "fastapi"), ("serve", "uvicorn"), ("mcp", "mcp")]
)
def test_missing_serve_extra_names_it(monkeypatch, command, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    out = CliRunner().invoke(cli, [command])
    assert out.exit_code == 1
    assert module in out.output and "pip install 'ragline[serve]'" in out.output
