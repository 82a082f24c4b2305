"""``ragline serve``, ``ragline keys`` and ``ragline trace``."""

from __future__ import annotations

import json
from typing import Any

import click

from .common import echo_json as _echo_json
from .common import json_option as _json
from .common import need_serve_extra


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--sync-root",
    "sync_roots",
    multiple=True,
    metavar="DIR | TENANT=DIR",
    help="Server folders a tenant's admins may sync through the API (and their "
    "sub-folders): DIR gives each tenant DIR/<tenant>, TENANT=DIR gives TENANT the folder "
    "DIR; repeatable. Links inside them are never followed.",
)
@click.option(
    "--rate-limit", type=int, default=None, help="Requests per minute per key (default 600)."
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes (each with its own connections and models; use about one per core).",
)
@click.option("--log-level", default="info", show_default=True)
@click.pass_obj
def serve_command(
    obj: Any,
    host: str,
    port: int,
    sync_roots: tuple[str, ...],
    rate_limit: int | None,
    workers: int,
    log_level: str,
) -> None:
    """Serve the HTTP API, the OpenAI-compatible endpoint and the web page.

    Create a key first: ragline keys create --tenant acme --admin. The page is at
    http://HOST:PORT/ and the OpenAPI description at /docs and /openapi.json.
    """
    need_serve_extra("the HTTP server", "fastapi", "uvicorn", "prometheus_client")
    import uvicorn

    from ..serve.app import create_app
    from ..serve.folders import parse_root

    for spec in sync_roots:  # a missing folder or a bad spec fails here, once
        parse_root(spec)

    if workers > 1:
        import os

        from ..serve.app import SERVE_CONFIG_ENV

        index = obj.index(pool_size=2)  # fail here, once, on a bad configuration
        # one embedding thread per worker unless configured: N workers already use N cores
        settings: dict[str, Any] = {
            "pool_size": 16,
            "embed_threads": index.settings.embed_threads or 1,
        }
        os.environ[SERVE_CONFIG_ENV] = json.dumps(
            {
                "settings": settings,
                "settings_file": obj.settings_file,
                "data_dir": str(obj.data_dir) if obj.data_dir else None,
                "collection": obj.collection,
                "sync_roots": [str(p) for p in sync_roots],
                "upload_dir": str(obj.data_path() / "uploads"),
                "rate_limit": rate_limit,
                "workers": workers,
            }
        )
        click.echo(
            f"ragline serving {index.settings.collection} on http://{host}:{port}/ "
            f"({workers} workers)",
            err=True,
        )
        _run_workers(host, port, workers, log_level)
        return
    index = obj.index(pool_size=16)
    app = create_app(
        index,
        sync_roots=sync_roots,
        upload_dir=obj.data_path() / "uploads",
        rate_limit=rate_limit,
    )
    click.echo(f"ragline serving {index.settings.collection} on http://{host}:{port}/", err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10)


def _run_workers(host: str, port: int, workers: int, log_level: str) -> None:
    """uvicorn's worker supervisor over a listening socket bound here with its protocol
    set to TCP: asyncio enables TCP_NODELAY on accepted connections only for such sockets,
    and without it every response waits ~40 ms for a delayed ACK (uvicorn binds with
    proto 0)."""
    import socket

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "ragline.serve.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        timeout_graceful_shutdown=10,
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        from ..core.errors import ConfigError

        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass


@click.group("keys")
def keys_group() -> None:
    """API keys of the HTTP server: each maps to a tenant and groups (stored hashed)."""


@keys_group.command("create")
@click.option("--tenant", required=True, help="Tenant whose documents the key reads.")
@click.option("--groups", default="", help="Comma-separated groups the key belongs to.")
@click.option("--admin", is_flag=True, help="May ingest, delete and manage the tenant's keys.")
@click.option("--name", default="", help="A label to recognise the key by.")
@click.option("--rate-limit", type=int, default=None, help="Requests per minute for this key.")
@_json
@click.pass_obj
def keys_create(
    obj: Any,
    tenant: str,
    groups: str,
    admin: bool,
    name: str,
    rate_limit: int | None,
    as_json: bool,
) -> None:
    """Create a key; it is printed once and only its hash is kept."""
    key, rec = obj.index().admin.create_key(
        tenant=tenant, groups=groups, admin=admin, name=name, rate_limit=rate_limit
    )
    if as_json:
        _echo_json({"key": key, **rec.to_dict()})
        return
    click.echo(key)
    role = "admin" if rec.admin else "reader"
    click.echo(
        f"(id {rec.id}, tenant {rec.tenant}, groups {','.join(rec.groups) or '-'}, {role}); "
        "store it now, it cannot be shown again",
        err=True,
    )


@keys_group.command("list")
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@click.option("--all", "show_revoked", is_flag=True, help="Include revoked keys.")
@_json
@click.pass_obj
def keys_list(obj: Any, tenant: str | None, show_revoked: bool, as_json: bool) -> None:
    """Keys with their tenant, groups and role (never the key itself)."""
    keys = obj.index().admin.list_keys(tenant, revoked=show_revoked)
    if as_json:
        _echo_json({"keys": [k.to_dict() for k in keys]})
        return
    if not keys:
        click.echo("no keys (create one: ragline keys create --tenant NAME --admin)")
    for k in keys:
        state = " revoked" if k.revoked_at else ""
        click.echo(
            f"{k.id:>4}  {k.prefix}…  {k.tenant:<16} {','.join(k.groups) or '-':<20} "
            f"{'admin' if k.admin else 'reader'}{state}  {k.name}"
        )


@keys_group.command("revoke")
@click.argument("key_id")
@_json
@click.pass_obj
def keys_revoke(obj: Any, key_id: str, as_json: bool) -> None:
    """Revoke a key by id or prefix (see ragline keys list); it stops working at once."""
    from ..core.errors import NotFoundError

    if not obj.index().admin.revoke_key(key_id):
        raise NotFoundError(f"no live key {key_id!r} (see: ragline keys list)")
    if as_json:
        _echo_json({"revoked": key_id})
    else:
        click.echo(f"revoked {key_id}")


@click.command("trace")
@click.argument("trace_id", required=False)
@click.option("--last", "last", type=int, default=None, help="List the N most recent traces.")
@click.option("--tenant", default=None, help="Only this tenant's traces (default: all).")
@_json
@click.pass_obj
def trace_command(
    obj: Any, trace_id: str | None, last: int | None, tenant: str | None, as_json: bool
) -> None:
    """Print one trace (every stage of a search or ask), or list recent ones with --last."""
    from ..core.errors import ConfigError, NotFoundError

    index = obj.index()
    if trace_id is None:
        items = index.traces(tenant=tenant, limit=last or 20)
        if as_json:
            _echo_json({"traces": items})
            return
        for t in items:
            flag = " abstained" if t["abstained"] else ""
            click.echo(
                f"{t['id']}  {t['created_at'][:19]}  {t['kind']:<6} {t['tenant']:<12} "
                f"{t['total_ms']:>8.1f} ms{flag}  {t['question'][:70]}"
            )
        if not items:
            click.echo("no traces yet")
        return
    if last is not None:
        raise ConfigError("give a trace id or --last N, not both")
    t = index.trace(trace_id, tenant=tenant)
    if t is None:
        raise NotFoundError(f"no trace {trace_id!r} (list recent ones: ragline trace --last 20)")
    if as_json:
        _echo_json(t)
        return
    from .trace_view import render_trace

    click.echo(render_trace(t))
