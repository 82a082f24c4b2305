"""``ragline worker``: take ingest tasks from the database until stopped."""

from __future__ import annotations

import signal
import sys
from typing import Any

import click


@click.command("worker")
@click.option("--drain", is_flag=True, help="Exit when the queue is empty instead of waiting.")
@click.option(
    "--stale-after",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds without a heartbeat after which a running task is taken over (its worker "
    "is presumed dead). Every worker of a database should use the same value.",
)
@click.option("--poll", default=1.0, show_default=True, type=float, help="Seconds between polls.")
@click.option("--name", default=None, help="Worker name in task records (default host:pid).")
@click.pass_obj
def worker_command(
    obj: Any, drain: bool, stale_after: float, poll: float, name: str | None
) -> None:
    """Take ingest tasks from the database (queued by `ragline ingest --enqueue`, `ragline
    sync --enqueue` or `ragline serve` with RAGLINE_INGEST_QUEUE=true) until stopped. Run any
    number, on any machine that reaches the database; a killed worker's task is taken over
    by another after --stale-after seconds."""
    from ..core.settings import Settings
    from ..index import Index
    from ..ingest.queue import Worker

    base = obj.index()  # opens (and migrates) the database once

    def open_index(collection: str) -> Any:
        if collection == base.settings.collection:
            return base
        s = Settings.resolve(obj.settings_file, data_dir=obj.data_dir, collection=collection)
        return Index(s)

    w = Worker(base.db, open_index, name=name, stale_after=stale_after, poll_s=poll)
    signal.signal(signal.SIGTERM, lambda *_: w.stop())
    click.echo(f"worker {w.name}: waiting for tasks", err=True)
    try:
        n = w.run(drain=drain)
    except KeyboardInterrupt:
        n = w.tasks_done
    click.echo(f"worker {w.name}: {n} task(s) done", err=True)
    sys.exit(0)
