"""``harvestsuite cluster``: the installation spread over simulated machines, to watch it and break it."""

from __future__ import annotations

import signal
import tempfile
import threading
from pathlib import Path

import click


@click.group()
def cluster() -> None:
    """Simulated machines (Linux network namespaces, needs root): PostgreSQL, RabbitMQ, two schedulers, the
    web UI, a web host with many sites and harvest controllers each on a host of its own, with links that
    can be cut, slowed and made lossy."""


@cluster.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the servers' data, the archive store and the logs go (default: a new temporary "
                   "directory, kept afterwards).")
@click.option("--harvesters", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--sites", type=click.IntRange(1, 100_000), default=300, show_default=True,
              help="Sites the web host serves, www.site1.dk to www.siteN.dk.")
@click.option("--site-delay", type=click.FloatRange(0, 10), default=0.2, show_default=True,
              help="Seconds the web host waits before each answer, so crawls last long enough to watch.")
@click.option("--brokers", type=click.Choice(["1", "3", "5"]), default="1", show_default=True,
              help="RabbitMQ nodes: one broker, or a cluster of nodes on hosts broker1 ... with quorum queues.")
@click.option("--wired-harvesters", is_flag=True,
              help="Give the harvester hosts links that are wires in user space, so `shape --delay` slows them "
                   "on a kernel without netem.")
def up(directory: Path | None, harvesters: int, sites: int, site_delay: float, brokers: str,
       wired_harvesters: bool) -> None:
    """Start the cluster and keep it until Ctrl-C, then remove every host, link and process of it."""
    from harvestdef.cluster.cluster import ADMIN, Cluster

    directory = directory or Path(tempfile.mkdtemp(prefix="harvestsuite-cluster-"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with Cluster(directory, harvesters=harvesters, sites=sites, site_delay=site_delay,
                 brokers=int(brokers), wired_harvesters=wired_harvesters) as running:
        assert running.network is not None
        click.echo(f"web UI: {running.ui_url}  (user {ADMIN}, password {running.password})")
        click.echo(f"API token: {running.token}")
        click.echo("hosts: " + ", ".join(f"{name} {host.address}" for name, host in running.network.hosts.items()))
        click.echo(f"logs: {running.logs}; archive store: {running.archive}")
        click.echo("metrics: " + ", ".join(running.metrics_url(host) for host in (
            *running.scheduler_hosts, "ui", *running.harvester_hosts)))
        click.echo(f"break a link from another shell: harvestsuite cluster cut {running.network.tag} harv1, "
                   f"... restore {running.network.tag} harv1, ... shape {running.network.tag} harv1 "
                   "--delay 200 --loss 10")
        click.echo("Ctrl-C stops it.")
        try:
            while not stop.wait(1.0):
                died = [p for p in running.processes.values() if p.has_died()]
                if died:
                    click.echo(f"{died[0].name} on {died[0].host} exited with {died[0].process.returncode}; "
                               f"its log: {died[0].log}", err=True)
                    break
        except KeyboardInterrupt:
            pass
        click.echo("stopping the cluster ...")


@cluster.command(name="list")
def list_networks() -> None:
    """The running clusters' networks and their hosts."""
    from harvestdef.cluster.network import Network

    for tag in Network.running():
        network = Network.attach(tag)
        hosts = ", ".join(f"{name} {host.address}{' (cut)' if network.is_cut(name) else ''}"
                          for name, host in network.hosts.items())
        click.echo(f"{tag} {network.subnet}: {hosts}")


@cluster.command()
@click.argument("tag")
@click.argument("host")
def cut(tag: str, host: str) -> None:
    """Cut HOST's link in cluster TAG: its packets stop both ways, as when its cable is pulled."""
    from harvestdef.cluster.network import Network

    Network.attach(tag).cut(host)


@cluster.command()
@click.argument("tag")
@click.argument("host")
def restore(tag: str, host: str) -> None:
    """Join HOST's link in cluster TAG again."""
    from harvestdef.cluster.network import Network

    Network.attach(tag).restore(host)


@cluster.command()
@click.argument("tag")
@click.argument("host")
@click.option("--delay", "delay_ms", type=click.FloatRange(0, 60_000), default=0.0, help="Milliseconds each way.")
@click.option("--loss", "loss_percent", type=click.FloatRange(0, 100), default=0.0, help="Percent lost each way.")
def shape(tag: str, host: str, delay_ms: float, loss_percent: float) -> None:
    """Delay and lose HOST's packets in cluster TAG (both 0: back to a clean link)."""
    from harvestdef.cluster.network import Network

    network = Network.attach(tag)
    if delay_ms or loss_percent:
        network.shape(host, delay_ms, loss_percent)
    else:
        network.unshape(host)


@cluster.command()
def clean() -> None:
    """Remove the networks of clusters whose process has died (a run killed before it could clean up)."""
    from harvestdef.cluster.network import remove_stale

    removed = remove_stale()
    click.echo(f"removed {', '.join(removed)}" if removed else "nothing to remove")
