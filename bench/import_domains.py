"""Benchmark of ``harvestsuite domains import``: N lines into a fresh PostgreSQL database and a SQLite file.

Generates a realistic domain list (mixed country and generic TLDs, second-level suffixes such as co.uk,
www. hosts, URLs, IDNs, duplicates, comments; no bad lines, since one bad line makes the import store
nothing), creates a fresh database, runs ``harvestsuite db init`` and the import as a user would (the
console command, in a child process), and prints lines/s, rows/s and the total seconds for each database.
The import reads the file twice: once to check every line, then to write; ``--check-only`` times the first
read alone.

    python bench/import_domains.py                       # 2,000,000 lines, PostgreSQL and SQLite
    python bench/import_domains.py --lines 200000 --no-sqlite
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

PG_ADMIN_URL = "postgresql+psycopg://root@127.0.0.1:5432/postgres"
BENCH_DATABASE = "hs_bench_import"
TLDS = ["dk"] * 30 + ["com"] * 20 + ["de"] * 8 + ["org"] * 5 + ["net"] * 5 + ["co.uk"] * 4 + ["se"] * 4 + [
    "no"] * 3 + ["fr"] * 3 + ["nl"] * 3 + ["eu", "info", "com.au", "co.jp", "github.io", "blogspot.com", "io",
                                          "gov.uk", "ac.uk", "fo", "gl", "is"]
WORDS = ["nyt", "avis", "kommune", "musik", "sport", "foto", "bager", "bog", "data", "hus", "have", "rejse",
         "film", "kunst", "skole", "klub", "net", "web", "shop", "info", "center", "service", "gruppe", "forening"]
IDN_WORDS = ["københavn", "århus", "ærø", "søndergård", "bücher", "straße", "mañana", "café"]


def generate(path: Path, lines: int, seed: int = 20241121) -> None:
    """Write ``lines`` lines: ~89% new names in various forms, ~3% duplicates, ~1% IDNs, comments."""
    rng = random.Random(seed)
    names: list[str] = []
    with path.open("w", encoding="utf-8") as out:
        for number in range(lines):
            roll = rng.random()
            if roll < 0.008:
                out.write("# curator's note\n" if rng.random() < 0.5 else "\n")
                continue
            if roll < 0.038 and names:
                out.write(rng.choice(names) + "\n")
                continue
            if roll < 0.048:
                name = f"{rng.choice(IDN_WORDS)}{number}.{rng.choice(['dk', 'de', 'es', 'fr'])}"
            else:
                name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}{number}.{rng.choice(TLDS)}"
            form = rng.random()
            if form < 0.6:
                line = name
            elif form < 0.75:
                line = "www." + name
            elif form < 0.85:
                line = f"http://www.{name}/index.html"
            elif form < 0.95:
                line = f"https://{name}/"
            else:
                line = f"http://shop.{name.upper()}:8080/a/b?c=d"
            if len(names) < 100_000:
                names.append(line)
            out.write(line + "\n")


def ensure_template(url: str) -> None:
    """db init loads templates/*.cxml; a checkout without default_orderxml gets a minimal one."""
    from harvestdef.db import schema as s

    engine = create_engine(url)
    with engine.begin() as conn:
        present = conn.scalar(select(func.count()).select_from(s.ordertemplates)
                              .where(s.ordertemplates.c.name == "default_orderxml"))
        if not present:
            conn.execute(insert(s.ordertemplates).values(name="default_orderxml", orderxml="<beans/>", isactive=True))
    engine.dispose()


def count_rows(url: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        total = sum(conn.scalar(text(f"SELECT count(*) FROM {table}")) or 0
                    for table in ("domains", "configurations", "seedlists", "config_seedlists"))
    engine.dispose()
    return total


def harvestsuite(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    # the console script installed beside this interpreter, as an operator would run it
    script = Path(sys.executable).with_name("harvestsuite")
    command = [str(script) if script.exists() else "harvestsuite", "--set", f"harvestsuite.database.url={url}", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def run_import(label: str, url: str, path: Path, lines: int) -> None:
    done = harvestsuite(url, "db", "init")
    if done.returncode != 0:
        raise SystemExit(f"{label}: db init failed: {done.stderr}")
    ensure_template(url)
    started = time.monotonic()
    result = harvestsuite(url, "domains", "import", str(path), "--actor", "bench")
    seconds = time.monotonic() - started
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-500:]
    rows = count_rows(url)
    created = re.search(r"domains created: (\d+)", summary)
    print(f"{label}: {summary}")
    print(f"{label}: {lines} lines in {seconds:.1f} s (exit status {result.returncode}): "
          f"{lines / seconds:,.0f} lines/s, {rows:,} rows ({created.group(1) if created else '?'} domains "
          f"with configuration, seed list and link) = {rows / seconds:,.0f} rows/s")


def time_check(path: Path, lines: int) -> None:
    """The first of the import's two reads: every line checked, nothing written (DomainImporter.check)."""
    from harvestdef.bulkimport import DomainImporter
    from harvestdef.repositories.domains import DomainDefaults

    importer = DomainImporter(create_engine("sqlite://"), DomainDefaults())
    started = time.monotonic()
    counts = importer.check(path)
    seconds = time.monotonic() - started
    print(f"check: {counts.lines_read:,} lines in {seconds:.1f} s ({lines / seconds:,.0f} lines/s, "
          f"{importer.parse_workers} parsing process(es) for files of {importer.parallel_from_bytes >> 20} MiB "
          f"and more)")


def fresh_postgresql(admin_url: str) -> str:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{BENCH_DATABASE}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{BENCH_DATABASE}"'))
    admin.dispose()
    return make_url(admin_url).set(database=BENCH_DATABASE).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--pg-admin-url", default=PG_ADMIN_URL)
    parser.add_argument("--no-postgresql", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated file and the databases")
    parser.add_argument("--check-only", action="store_true",
                        help="time only the check of every line that precedes the import (no database)")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="hs-bench-import-"))
    try:
        path = workdir / "domains.txt"
        started = time.monotonic()
        generate(path, options.lines)
        print(f"generated {options.lines:,} lines ({path.stat().st_size / 1e6:.0f} MB) in "
              f"{time.monotonic() - started:.1f} s: {path}")
        if options.check_only:
            time_check(path, options.lines)
            return
        if not options.no_postgresql:
            url = fresh_postgresql(options.pg_admin_url)
            try:
                run_import("postgresql", url, path, options.lines)
            finally:
                if not options.keep:
                    admin = create_engine(options.pg_admin_url, isolation_level="AUTOCOMMIT")
                    with admin.connect() as conn:
                        conn.execute(text(f'DROP DATABASE IF EXISTS "{BENCH_DATABASE}" WITH (FORCE)'))
                    admin.dispose()
        if not options.no_sqlite:
            run_import("sqlite", f"sqlite:///{workdir / 'harvest.db'}", path, options.lines)
    finally:
        if options.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
