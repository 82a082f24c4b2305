"""Parse functions that misbehave on purpose, run inside the parse workers by the tests."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ragline.parse import parse_file


def parse(path: Path):
    name = path.name
    if name.startswith("hang"):
        time.sleep(3600)
    if name.startswith("hog"):
        blocks = []
        while True:
            blocks.append(bytearray(64 * 1024 * 1024))
    if name.startswith("crash"):
        os._exit(139)
    return parse_file(path)
