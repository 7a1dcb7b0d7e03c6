"""``harvestsuite webui``: serve the web UI and its JSON API."""

from __future__ import annotations

import click

from harvestdef.cli import AppContext, pass_app


@click.group()
def webui() -> None:
    """The web UI for curators, operators and archivists, with its JSON API under /api/v1."""


@webui.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="Port to listen on.")
@click.option("--threads", type=click.IntRange(1, 256), default=16, show_default=True,
              help="Requests served at once.")
@click.option("--url-prefix", default="", help="Path the reverse proxy serves the web UI under, e.g. /harvest.")
@pass_app
def run(app: AppContext, host: str, port: int, threads: int, url_prefix: str) -> None:
    """Serve the web UI with waitress, a production WSGI server, until SIGTERM or Ctrl-C.

    Behind a reverse proxy, forward X-Forwarded-Proto/-Host/-For; waitress trusts them from 127.0.0.1.
    """
    import waitress

    from webui import create_app

    application = create_app(app.settings, app.engine())
    click.echo(f"web UI at http://{host}:{port}{url_prefix or '/'}")
    waitress.serve(application, host=host, port=port, threads=threads, url_prefix=url_prefix,
                   trusted_proxy="127.0.0.1", trusted_proxy_headers={"x-forwarded-proto", "x-forwarded-host",
                                                                     "x-forwarded-for"},
                   clear_untrusted_proxy_headers=True, ident="HarvestSuite")
