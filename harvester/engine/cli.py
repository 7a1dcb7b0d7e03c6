"""``harvestsuite engine``: start the bundled crawl engine, a Heritrix-3-compatible REST server.

    harvestsuite engine --jobs-dir DIR [--port 8090] [--auth USER:PASS] [--bind ADDR] [--hosts FILE]
                        [--cert PEM --key PEM] [--stop-when-stdin-closes] [--browser]

Port, credentials, address and hosts file come from the same settings the harvest controller reads
(``harvester.harvesting.heritrix.guiPort``, ``…adminName``/``…adminPassword``, ``harvestsuite.crawler.bind``,
``harvestsuite.crawler.hostsFile``); the options override them.

With ``--browser`` it is the browser crawler: the same engine, REST API and job directory, each URI loaded
as a page in headless Chromium through a recording proxy (harvester/engine/fetching/browserfetch.py, docs/browser.md),
under the ``harvestsuite.crawler.browser.*`` settings.

It prints the URL it listens on (``--port 0`` picks a free port) and the certificate's fingerprint, then
serves until SIGTERM or SIGINT, when it stops answering, checkpoints every running crawl it can, terminates
them and exits 0. Also runnable as ``python -m harvester.engine.cli``.

With ``--stop-when-stdin-closes`` it also stops that way when its standard input reaches end of file. The
harvest controller starts it so, with a pipe it holds open and never writes to: when the controller dies,
however it dies (SIGKILL, the OOM killer), the kernel closes its end and the engine checkpoints and ends
its crawl at once, instead of crawling on as an orphan in its own session while the scheduler gives the
job to another controller. That checkpoint is named in the job directory's ``shutdown-checkpoint.json``
once the crawl has ended after it (harvester/engine/rest/jobregistry.py): the controller, started again, resumes the
job from it if the scheduler grants the job again.

A pipe rather than the alternatives because its end of file comes the moment the last holder is gone, on
every POSIX system: Linux's PR_SET_PDEATHSIG fires when the *thread* that started the child exits (the
controller's crawl thread, not the controller), and polling the parent pid is late by its period and
fooled by a subreaper. Only the one who started the engine may hold the pipe:
it is not inherited (Python's pipes close on exec). Off by default, so an engine started by hand, whose
standard input may be a terminal or /dev/null, runs until it is stopped.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import click

from harvestdef.errors import SettingsError
from harvestdef.settings import Settings, load_settings
from harvester.engine.collector import tune_collector
from harvester.engine.extraction.sitemaps import SitemapLimits
from harvester.engine.fetching.bounds import ResponseBounds
from harvester.engine.fetching.browser import BrowserOptions
from harvester.engine.fetching.hostsfile import HostsFileError, load_hosts_file
from harvester.engine.rest.digest import DigestAuthenticator
from harvester.engine.rest.jobregistry import JobRegistry
from harvester.engine.rest.server import EngineServer
from harvester.engine.rest.tls import CertificateError, ensure_certificate, fingerprint, server_context

log = logging.getLogger(__name__)


def parse_auth(value: str) -> tuple[str, str]:
    """Heritrix's ``-a``: ``user:password``, ``password`` (user admin) or ``@file`` holding either."""
    if value.startswith("@"):
        value = Path(value[1:]).read_text(encoding="utf-8").strip()
    user, sep, password = value.partition(":")
    if not sep:
        user, password = "admin", value
    if not user or not password:
        raise click.BadParameter("expected USER:PASSWORD with both parts non-empty", param_hint="--auth")
    return user, password


def _settings(ctx: click.Context) -> Settings:
    """The settings of ``harvestsuite`` when run as its subcommand, else loaded here (``python -m``)."""
    obj = ctx.find_root().obj
    found = getattr(obj, "settings", None)
    if isinstance(found, Settings):
        return found
    try:
        return load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from exc


def stop_when_stdin_closes(stop: threading.Event) -> threading.Thread:
    """Set ``stop`` once standard input reaches end of file (or cannot be read); whatever is written to it
    is read and ignored. Returns the watching thread, a daemon, already started."""

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError as exc:
            log.warning("standard input cannot be read (%s): stopping the engine", exc)
        else:
            log.warning("standard input closed: whoever started the engine is gone; stopping the engine")
        stop.set()

    thread = threading.Thread(target=watch, name="stdin-watch", daemon=True)
    thread.start()
    return thread


@click.command("engine")
@click.option("--jobs-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory of job directories (made if missing).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="HTTPS port; 0 picks a free one (default: the guiPort setting).")
@click.option("--auth", "auth", default=None, metavar="USER:PASS",
              help="Digest credentials (or PASS, or @FILE); default: the adminName/adminPassword settings.")
@click.option("--bind", default=None, help="Address to listen on (default: the crawler.bind setting).")
@click.option("--hosts", "hosts_file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="File of 'name address' lines that overrides DNS for the crawls (default: the crawler.hostsFile "
                   "setting).")
@click.option("--cert", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="PEM certificate to serve (default: self-signed, made in the jobs dir at first start).")
@click.option("--key", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="PEM private key of --cert.")
@click.option("--auth-failure-delay", type=click.FloatRange(0), default=6.0, show_default=True,
              help="Seconds a failed login delays the next one (Heritrix: 6).")
@click.option("--stop-when-stdin-closes", "stop_on_stdin_eof", is_flag=True, default=False,
              help="Also stop (checkpoint and end the crawls, as at SIGTERM) when standard input reaches end of "
                   "file: the harvest controller's pipe, closed when it dies.")
@click.option("--browser", "use_browser", is_flag=True, default=False,
              help="Be the browser crawler: load each URI as a page in headless Chromium through the recording "
                   "proxy (limits: the harvestsuite.crawler.browser.* settings).")
@click.pass_context
def engine(ctx: click.Context, jobs_dir: Path, port: int | None, auth: str | None, bind: str | None,
           hosts_file: Path | None, cert: Path | None, key: Path | None, auth_failure_delay: float,
           stop_on_stdin_eof: bool, use_browser: bool) -> None:
    """Run the crawl engine until SIGTERM/SIGINT (or, with --stop-when-stdin-closes, end of standard input)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = _settings(ctx)
    port = settings.crawler.port if port is None else port
    bind = bind or settings.crawler.bind
    if auth is None:
        user, password = settings.harvester.heritrixUser, settings.harvester.heritrixPassword
    else:
        user, password = parse_auth(auth)
    if hosts_file is None and settings.crawler.hostsFile:
        hosts_file = Path(settings.crawler.hostsFile)
    try:
        hosts = load_hosts_file(hosts_file) if hosts_file else {}
    except (HostsFileError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--hosts") from exc
    jobs_dir = jobs_dir.resolve()
    jobs_dir.mkdir(parents=True, exist_ok=True)
    try:
        cert_path, key_path = ensure_certificate(jobs_dir, ["localhost", "127.0.0.1", "::1", bind], cert, key)
    except CertificateError as exc:
        raise click.BadParameter(str(exc), param_hint="--cert/--key") from exc
    browser = BrowserOptions.from_settings(settings.crawler) if use_browser else None
    if browser is not None and not Path(browser.executable).is_file():
        raise click.ClickException(f"harvestsuite.crawler.browser.executable: no browser at {browser.executable}")
    if browser is not None and importlib.util.find_spec("playwright") is None:
        raise click.ClickException("--browser needs the Python package playwright: pip install 'harvestsuite[browser]'")
    # harvestsuite.network.allowDestinations and the hosts file's names: what the crawls may connect to
    registry = JobRegistry(jobs_dir, hosts, SitemapLimits.from_settings(settings.crawler), browser,
                           bounds=ResponseBounds.from_settings(settings.crawler),
                           destinations=settings.network.policy(hosts))
    authenticator = DigestAuthenticator(user, password, failure_penalty=auth_failure_delay)
    try:
        server = EngineServer(bind, port, registry, authenticator, server_context(cert_path, key_path))
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {bind}:{port}: {exc}") from exc

    registry.api_port = server.httpd.server_address[1]
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.warning("signal %s: stopping the engine", signal.Signals(signum).name)
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    if stop_on_stdin_eof:
        stop_when_stdin_closes(stop_requested)
    click.echo(f"Certificate {cert_path} SHA-256 fingerprint {fingerprint(cert_path)}")
    click.echo(f"Jobs directory {jobs_dir} ({len(registry.snapshot().jobs)} jobs)")
    if browser is not None:
        click.echo(f"Browser crawler: {browser.executable}, {browser.page_time_limit:.0f} s per page")
    tune_collector()
    server.start()
    # Printed last and only once the server accepts: whoever starts the engine waits for this line.
    click.echo(f"Engine listening at {server.url}")
    sys.stdout.flush()
    # The main thread only waits: signal handlers run here, and the server lives in its own thread.
    while not stop_requested.wait(timeout=1.0):
        pass
    server.stop()
    click.echo("Engine stopped")


if __name__ == "__main__":
    engine()
