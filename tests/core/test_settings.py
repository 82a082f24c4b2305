from __future__ import annotations

import json

import pytest

import ragline
from ragline.core.errors import ConfigError
from ragline.core.settings import Settings


def test_precedence_file_env_overrides(tmp_path, monkeypatch):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"collection": "from-file", "top_k": 7}))
    monkeypatch.setenv("RAGLINE_COLLECTION", "from-env")
    s = Settings.load(f)
    assert s.collection == "from-env" and s.top_k == 7
    assert Settings.load(f, collection="explicit").collection == "explicit"


def test_secrets_are_redacted_and_bad_values_explained(monkeypatch):
    s = Settings(database_url="postgresql://u:hunter2@db/x")
    assert "hunter2" not in json.dumps(s.to_dict())
    with pytest.raises(ConfigError) as e:
        Settings.load(top_k=0)
    assert "top_k" in str(e.value)
    with pytest.raises(ConfigError):
        Settings.load(database_url="mysql://nope")


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, ragline; heavy = [m for m in ('numpy', 'onnxruntime', 'psycopg', 'pydantic', 'tokenizers') if m in sys.modules]; print(heavy)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    assert callable(ragline.open)
