"""Checkpoints: the crawl's whole state in ``<job>/checkpoints/cpNNNNN-<yyyyMMddHHmmss>/``.

Saved: a copy of the frontier's store (queued URIs with hop path, via, seed, attempts; every URL met with
its state and shortest path; deferred outlinks; within-job digests: harvester/engine/frontier/urlstore.py) and a
JSON file with statistics, quota counters per group, the WARC serial, robots.txt bodies and DNS answers per
host, the operators' live changes in force (reject rules, domain budgets, bean properties set:
harvester/engine/live/livechanges.py), so a resumed crawl does not forget a change, and the sites' sessions
(the cookie jar, login forms posted, HTTP credentials in use, sitemaps named and not yet fetched), so a
resumed crawl stays logged in and reads its sitemaps as Heritrix's BDB keeps its cookie store. A resumed crawl refetches
none of it. Both are written to a temporary directory and renamed, so a checkpoint is complete or absent.

``save_crawl`` takes a crawl's parts to a checkpoint and ``resume_crawl`` puts them back; when it is safe to
(no fetch in flight) is the crawl controller's to ensure. A launch's store is made here too (``launch_store``):
fresh, or the checkpoint's copy.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harvestdef.errors import CrawlEngineError
from harvester.engine.frontier.urlstore import UrlStore
from harvester.engine.reporting.stats import CrawlStats
from harvester.heritrix3.layout import STATE_DIR

if TYPE_CHECKING:
    from harvester.engine.fetching.servercache import ServerCache
    from harvester.engine.frontier.frontier import Frontier
    from harvester.engine.frontier.quota import QuotaEnforcer
    from harvester.engine.frontier.scope import Scope
    from harvester.engine.live.livechanges import LiveChanges

STATE_FILE = "crawl-state.json.gz"
STORE_FILE = "frontier.sqlite"     # the frontier's store, in <job>/state/ and in each checkpoint
_NAME = re.compile(r"^cp(\d{5})-(\d{14})$")


class CheckpointError(CrawlEngineError):
    """A checkpoint that cannot be resumed; the message names it and says why."""


def require_resumable(directory: Path, store_file: str) -> None:
    """Refuse, before anything is copied or started, a checkpoint this engine cannot resume from.

    A checkpoint without ``store_file`` holds its frontier in its JSON, a layout this engine does not read;
    resuming without its queued URIs and seen set would fetch everything again, so it is refused rather than
    half-resumed."""
    directory = Path(directory)
    _state_path(directory)
    if not (directory / store_file).is_file():
        raise CheckpointError(
            f"checkpoint {directory.name} cannot be resumed: it was written before the frontier's on-disk store "
            f"(no {store_file} in {directory}), and its frontier is in a form this engine no longer reads; "
            "launch the job without a checkpoint to crawl it afresh")


@dataclass(frozen=True)
class Sessions:
    """What a crawl keeps of its sites' sessions: the cookie jar (CookieStore.to_json), the login forms
    posted (credential names), the HTTP credentials in use per server (HttpAuthentication.to_json), and the
    URLs named as sitemaps and not yet fetched. Empty in a checkpoint of a crawl without them, or older."""

    cookies: list[dict] = field(default_factory=list)
    logins_posted: list[str] = field(default_factory=list)
    http_authentication: dict = field(default_factory=dict)
    sitemaps: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"cookies": self.cookies, "logins_posted": self.logins_posted,
                "http_authentication": self.http_authentication, "sitemaps": self.sitemaps}

    @classmethod
    def from_json(cls, data: dict) -> Sessions:
        return cls(cookies=list(data.get("cookies") or []), logins_posted=list(data.get("logins_posted") or []),
                   http_authentication=dict(data.get("http_authentication") or {}),
                   sitemaps=list(data.get("sitemaps") or []))


@dataclass(frozen=True)
class CheckpointState:
    """The crawl's state that is not in the frontier's store, as the checkpoint's JSON holds it."""

    job: str
    stats: dict                                          # CrawlStats.to_json(), with elapsed_before_ms
    quotas: dict[str, tuple[int, int, str | None]]       # queue key -> (fetch successes, bytes, retired reason)
    warc_serial: int                                     # the last WARC file's serial; a resume continues it
    robots: dict[str, str | None]                        # host:port -> robots.txt text (None: there was none)
    dns: dict[str, str | None]                           # host -> address (None: the lookup failed)
    live_changes: dict = field(default_factory=dict)     # LiveChanges.to_json(); none in older checkpoints
    sessions: Sessions = field(default_factory=Sessions)  # cookies, logins, credentials, sitemaps named

    def to_json(self) -> dict:
        return {"job": self.job, "stats": self.stats, "quotas": {k: list(v) for k, v in self.quotas.items()},
                "warc_serial": self.warc_serial, "robots": self.robots, "dns": self.dns,
                "live_changes": self.live_changes, "sessions": self.sessions.to_json()}

    @classmethod
    def from_json(cls, data: dict, directory: Path) -> CheckpointState:
        try:
            return cls(job=str(data["job"]), stats=dict(data["stats"]),
                       quotas={key: (int(s), int(b), r) for key, (s, b, r) in data["quotas"].items()},
                       warc_serial=int(data.get("warc_serial", 0)), robots=dict(data["robots"]),
                       dns=dict(data["dns"]), live_changes=dict(data.get("live_changes") or {}),
                       sessions=Sessions.from_json(dict(data.get("sessions") or {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {directory.name} cannot be resumed: its {STATE_FILE} lacks or "
                                  f"mangles {exc}") from exc


def checkpoint_names(checkpoints_dir: Path) -> list[str]:
    if not checkpoints_dir.is_dir():
        return []
    return sorted(p.name for p in checkpoints_dir.iterdir() if _NAME.match(p.name) and (p / STATE_FILE).is_file())


def next_checkpoint_name(checkpoints_dir: Path) -> str:
    numbers = [int(_NAME.match(name).group(1)) for name in checkpoint_names(checkpoints_dir)]
    return f"cp{(max(numbers) + 1) if numbers else 1:05d}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"


def save_checkpoint(checkpoints_dir: Path, name: str, state: CheckpointState,
                    write_more: Callable[[Path], None] | None = None) -> Path:
    """Write ``state`` (and whatever ``write_more`` puts in the directory: the store's copy) as checkpoint
    ``name``."""
    checkpoints_dir.mkdir(parents=True, exist_ok=True)
    temporary = checkpoints_dir / f".{name}.tmp"
    temporary.mkdir(exist_ok=True)
    if write_more is not None:
        write_more(temporary)
    with gzip.open(temporary / STATE_FILE, "wt", encoding="utf-8", compresslevel=3) as handle:
        json.dump(state.to_json(), handle)
        handle.flush()
    os.replace(temporary, checkpoints_dir / name)
    return checkpoints_dir / name


def _state_path(directory: Path) -> Path:
    """The checkpoint's state file; CheckpointError naming the checkpoint when it has none."""
    path = directory / STATE_FILE
    if not path.is_file():
        raise CheckpointError(f"checkpoint {directory.name} cannot be resumed: {directory} has no {STATE_FILE}")
    return path


def load_checkpoint(directory: Path) -> CheckpointState:
    path = _state_path(Path(directory))
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return CheckpointState.from_json(json.load(handle), Path(directory))


def launch_store(job_dir: Path, resume_from: Path | None) -> UrlStore:
    """The frontier's store of a launch, in the job's state/ directory as Heritrix's BDB: made anew, or for a
    resumed launch a copy of the checkpoint's (which is refused first if it cannot be resumed)."""
    store_path = Path(job_dir) / STATE_DIR / STORE_FILE
    if resume_from is not None:
        require_resumable(resume_from, STORE_FILE)
        store_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(resume_from / STORE_FILE, store_path)
    return UrlStore(store_path, fresh=resume_from is None)


def save_crawl(checkpoints_dir: Path, name: str, *, job: str, stats: CrawlStats, elapsed_ms: int,
               frontier: Frontier, quota: QuotaEnforcer, servers: ServerCache, warc_serial: int,
               live_changes: dict | None = None, sessions: Sessions | None = None) -> Path:
    """Checkpoint ``name`` of a crawl with no fetch in flight. Queued URIs, the seen set, deferred outlinks
    and digests are in the store: with every queue's head spilled to it, a copy of the store and the
    state beside it are one consistent state."""
    frontier.spill_heads()
    state = CheckpointState(
        job=job, stats={**stats.to_json(), "elapsed_before_ms": elapsed_ms},
        quotas={key: (*quota.counts(key), queue.retired_reason) for key, queue in frontier.queues.items()},
        warc_serial=warc_serial, robots=dict(servers.robots_texts), dns=dict(servers.addresses),
        live_changes=live_changes or {}, sessions=sessions or Sessions())
    return save_checkpoint(checkpoints_dir, name, state,
                           lambda directory: frontier.store.backup(directory / STORE_FILE))


def resume_crawl(directory: Path, *, frontier: Frontier, quota: QuotaEnforcer, servers: ServerCache,
                 scope: Scope, live: LiveChanges | None = None) -> tuple[CrawlStats, int, Sessions]:
    """Put checkpoint ``directory``'s state back into a launch whose store is the checkpoint's copy
    (``launch_store``): queues, retired groups and quota counts, DNS and robots.txt answers, the seeds in
    scope, the live changes in force. Returns the statistics to continue from, the last WARC serial
    written and the sessions (cookies, logins, credentials in use, sitemaps named) for the launch's parts."""
    state = load_checkpoint(directory)
    if live is not None:
        # First: the queues restored next are made with the parallelQueues in force, not the template's.
        live.restore(state.live_changes)
    frontier.restore_queues()
    for key, (successes, all_bytes, reason) in state.quotas.items():
        frontier.retire(key, reason)
        quota.restore(key, successes, all_bytes)
    stats = CrawlStats.from_json(state.stats)
    servers.restore(state.dns, state.robots)
    for seed in stats.seeds:
        scope.add_seed(seed)
    return stats, state.warc_serial, state.sessions
