"""A real ragline HTTP server on loopback for tests: uvicorn in a thread, a fresh schema."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Live:
    url: str
    index: Any
    app: Any
    keys: dict[str, str] = field(default_factory=dict)

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


@contextmanager
def live_server(index: Any, *, upload_dir: Path, **app_options: Any) -> Iterator[Live]:
    import uvicorn

    from ragline.serve.app import create_app

    app = create_app(index, upload_dir=upload_dir, **app_options)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield Live(url=f"http://127.0.0.1:{port}", index=index, app=app)
    finally:
        server.should_exit = True
        thread.join(15)
