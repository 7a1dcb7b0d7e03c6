"""The reports Heritrix writes into ``<launch>/reports/`` at the end of a crawl and on checkpoint:
crawl, seeds, hosts, source, mimetype, responsecode and frontier-summary reports (peers.md §1.3)."""

from __future__ import annotations

from pathlib import Path

from harvester.engine.stats import CrawlStats

# Heritrix's report class names (the /engine/job/NAME/report/<name> resource) and their files.
REPORT_FILES = {"CrawlSummaryReport": "crawl-report.txt", "SeedsReport": "seeds-report.txt",
                "HostsReport": "hosts-report.txt", "SourceTagsReport": "source-report.txt",
                "MimetypesReport": "mimetype-report.txt", "ResponseCodeReport": "responsecode-report.txt",
                "FrontierSummaryReport": "frontier-summary-report.txt"}


class _ReportDirectory:
    """Collects the reports' texts by file name, so they can be written or served without a file."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def __truediv__(self, name: str) -> _ReportText:
        return _ReportText(self.texts, name)


class _ReportText:
    def __init__(self, texts: dict[str, str], name: str) -> None:
        self.texts, self.name = texts, name

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        self.texts[self.name] = text


def write_reports(directory: Path, job_name: str, exit_status: str | None, elapsed_ms: int, stats: CrawlStats,
                  frontier_summary: dict[str, int], queue_sizes: dict[str, int]) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in render_reports(job_name, exit_status, elapsed_ms, stats, frontier_summary,
                                     queue_sizes).items():
        (directory / name).write_text(text, encoding="utf-8")


def render_reports(job_name: str, exit_status: str | None, elapsed_ms: int, stats: CrawlStats,
                   frontier_summary: dict[str, int], queue_sizes: dict[str, int]) -> dict[str, str]:
    """Every report's text by file name."""
    directory = _ReportDirectory()
    elapsed_s = max(elapsed_ms / 1000, 1e-3)
    (directory / "crawl-report.txt").write_text(
        f"crawl name: {job_name}\n"
        f"crawl status: {exit_status or 'RUNNING'}\n"
        f"duration: {elapsed_ms} ms\n\n"
        f"seeds crawled: {sum(1 for s, _ in stats.seeds.values() if s > 0)}\n"
        f"seeds uncrawled: {sum(1 for s, _ in stats.seeds.values() if s <= 0)}\n\n"
        f"hosts visited: {len(stats.hosts)}\n\n"
        f"URIs processed: {stats.downloaded + stats.failures}\n"
        f"URI successes: {stats.downloaded}\n"
        f"URI failures: {stats.failures}\n"
        f"URI disregards: 0\n\n"
        f"novel URIs: {stats.novel_count}\n"
        f"duplicate-by-hash URIs: {stats.dup_count}\n\n"
        f"total crawled bytes: {stats.total_bytes}\n"
        f"novel crawled bytes: {stats.novel_bytes}\n"
        f"duplicate-by-hash crawled bytes: {stats.dup_bytes}\n\n"
        f"URIs/sec: {stats.downloaded / elapsed_s:.2f}\n"
        f"KB/sec: {stats.total_bytes / 1024 / elapsed_s:.0f}\n", encoding="utf-8")
    lines = ["[code] [status] [seed] [redirect]"]
    for seed, (code, redirect) in sorted(stats.seeds.items()):
        lines.append(f"{code} {'CRAWLED' if code > 0 else 'NOTCRAWLED'} {seed} {redirect or ''}".rstrip())
    (directory / "seeds-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["[#urls] [#bytes] [host] [#robots] [#remaining] [#novel-urls] [#novel-bytes] [#dup-by-hash-urls] "
             "[#dup-by-hash-bytes] [#not-modified-urls] [#not-modified-bytes]"]
    for host, h in sorted(stats.hosts.items(), key=lambda item: -item[1].urls):
        lines.append(f"{h.urls} {h.bytes} {host} {h.robots_denied} {queue_sizes.get(host, 0)} {h.novel_urls} "
                     f"{h.novel_bytes} {h.dup_urls} {h.dup_bytes} 0 0")
    (directory / "hosts-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["[source] [host] [#urls]"]
    (directory / "source-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["[#urls] [#bytes] [mime-types]"]
    for mime, count in stats.mimetypes.most_common():
        lines.append(f"{count} {stats.mimetype_bytes[mime]} {mime}")
    (directory / "mimetype-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["[#urls] [rescode]"]
    for code, count in stats.status_codes.most_common():
        lines.append(f"{count} {code}")
    (directory / "responsecode-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = [f"{key}: {value}" for key, value in frontier_summary.items()]
    lines.append("")
    lines.append("[queue] [currentSize]")
    lines.extend(f"{key} {size}" for key, size in sorted(queue_sizes.items()))
    (directory / "frontier-summary-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory.texts
