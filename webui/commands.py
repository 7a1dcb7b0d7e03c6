"""``harvestsuite webui``: serve the web UI and its JSON API."""

from __future__ import annotations

import threading

import click

from harvestdef.cli import AppContext, pass_app
from harvestdef.settings import Settings

# how often the server's loop looks at the stop event; also the longest a stop waits for the loop
STOP_CHECK_SECONDS = 0.5


def serve(settings: Settings, stop: threading.Event, url_prefix: str = "") -> None:
    """Serve the web UI with waitress on ``harvestsuite.webui.host``/``port`` until ``stop`` is set.

    The server's loop runs here, a slice at a time, so the server is closed by the thread that runs it.
    This is also the ``webui`` role of the ``harvestsuite.roles`` entry points, which ``harvestsuite demo``
    runs in a thread beside the other roles. With ``harvestsuite.metrics.webuiPort`` set, the request
    metrics (webui/metrics.py) are served there while it serves.
    """
    import waitress
    from waitress import wasyncore

    from harvestdef.db.engine import engine_from_settings
    from harvestdef.metrics import serving
    from webui import create_app
    from webui.context import webui_context_of
    from webui.metrics import metrics_of

    web = settings.webui
    engine = engine_from_settings(settings.database)
    try:
        # Behind a reverse proxy, X-Forwarded-Proto/-Host/-For are trusted from 127.0.0.1 only.
        sockets: dict = {}  # the server's dispatchers: ours, so this thread can run and close them
        app = create_app(settings, engine)
        server = waitress.create_server(
            app, map=sockets, host=web.host, port=web.port, threads=web.threads,
            url_prefix=url_prefix,
            trusted_proxy="127.0.0.1", trusted_proxy_headers={"x-forwarded-proto", "x-forwarded-host",
                                                              "x-forwarded-for"},
            clear_untrusted_proxy_headers=True, ident="HarvestSuite")
        click.echo(f"web UI at http://{web.host}:{web.port}{url_prefix or '/'}", err=True)
        try:
            with serving(settings.metrics.bind, settings.metrics.webuiPort, metrics_of(app).registry,
                         "the web UI") as endpoint:
                if endpoint is not None:
                    click.echo(f"web UI: metrics at {endpoint.url}", err=True)
                while not stop.is_set():
                    wasyncore.loop(timeout=STOP_CHECK_SECONDS, map=sockets, count=1)
        finally:
            server.task_dispatcher.shutdown()
            wasyncore.close_all(sockets)
            webui_context_of(app).token_uses.close()  # the uses noted since its last write
    finally:
        engine.dispose()


@click.group()
def webui() -> None:
    """The web UI for curators, operators and archivists, with its JSON API under /api/v1."""


@webui.command()
@click.option("--host", default=None, help="Address to listen on (default: harvestsuite.webui.host, 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port to listen on (default: harvestsuite.webui.port, 8080).")
@click.option("--threads", type=click.IntRange(1, 256), default=None,
              help="Requests served at once (default: harvestsuite.webui.threads, 16).")
@click.option("--url-prefix", default="", help="Path the reverse proxy serves the web UI under, e.g. /harvest.")
@pass_app
def run(app: AppContext, host: str | None, port: int | None, threads: int | None, url_prefix: str) -> None:
    """Serve the web UI with waitress, a production WSGI server, until SIGTERM or Ctrl-C.

    Behind a reverse proxy, forward X-Forwarded-Proto/-Host/-For; waitress trusts them from 127.0.0.1.
    """
    import dataclasses
    import signal

    chosen = {key: value for key, value in (("host", host), ("port", port), ("threads", threads))
              if value is not None}
    settings = dataclasses.replace(app.settings, webui=dataclasses.replace(app.settings.webui, **chosen))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serve(settings, stop, url_prefix)
