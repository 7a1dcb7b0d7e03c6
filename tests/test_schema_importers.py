"""Which modules may read and write the harvest database's tables directly (docs/database.md).

The repositories (harvestdef/repositories/) and the database package itself (harvestdef/db/) own the
schema. Any other module that imports it is listed here with the reason a direct query is the better
shape there; its module docstring says the same. A new importer fails this test until it is added with its
reason, so the list cannot grow silently, and a module that stops importing the schema must leave it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWNERS = ("harvestdef/repositories/", "harvestdef/db/")

MAY_IMPORT_THE_SCHEMA = {
    # bulk loading: COPY and set-aside constraints for millions of rows, no row-at-a-time repository
    "harvestdef/bulkimport.py": "the NetarchiveSuite import streams whole tables in with COPY",
    "harvestdef/bulkload.py": "PostgreSQL's bulk-load steps (COPY, constraints set aside) by table name",
    "harvestdef/dedup/rebuild.py": "the migration's one streamed read of many jobs' domains (job_configs)",
    "harvestdef/demo/definitions.py": "the demo's fixed definitions, written once into an empty database",
    "harvestdef/demo/narrator.py": "the demo's narration reads what the scheduler wrote, to print it",
    # the scheduler: what is not a definition or a job's state, and the streaming reads of job generation
    "scheduler/batch.py": "removes the running-job monitor rows of ended jobs (live figures, no repository)",
    "scheduler/dedupsources.py": "each job's deduplication sources (job_dedup_sources), and runs given one index",
    "scheduler/dispatch.py": "a ready message's one statement on the controller's row, the hot path",
    "scheduler/intake.py": "controllers' rows, the running-job monitor and dead letters: what harvesters said",
    "scheduler/jobgen/generate.py": "a run's inputs read in the run's transaction, under its lock",
    "scheduler/jobgen/selection.py": "the streamed selection of millions of configurations (docs/jobgen.md)",
    "scheduler/leader.py": "the leadership lock: the database's own locking, not a definition",
    "scheduler/progresshistory.py": "thins the running-job progress samples (runningjobshistory) by time",
    "scheduler/readiness.py": "readiness queries over all harvests and their runs' jobs, and harvest_state",
    "scheduler/supervision.py": "supervision queries over all running jobs and their controllers",
    # the web UI: read-only lists and statistics pages, keyset-paged or streamed, shaped for their page
    "webui/api/exports.py": "CSV exports streamed in keyset pages",
    "webui/api/extendedfields.py": "names the table whose row carries the fields, for the repository",
    "webui/api/history.py": "history and statistics read from the summary tables by index ranges",
    "webui/api/jobs.py": "the job list, keyset-paged, joined with its harvest's name",
    "webui/api/live.py": "a running job's monitor rows, progress samples, frontier report and controller heartbeat",
    "webui/api/users.py": "the user's row as it is now, for a stale edition's message",
    "webui/api/openapi.py": "column lengths of the API's request schemas",
    "webui/api/status.py": "the running jobs' monitor figures and why harvests wait (harvest_state), read-only",
    "webui/api/system.py": "the controllers, queue depths and scheduler liveness of the System page",
    "webui/history/captures.py": "the seeds and job starts of the few runs a history page links to replay",
    "webui/history/views.py": "the harvest definitions' names for the index page",
    "webui/qa.py": "a job's domains against the previous run (historyinfo) and a run's QA sums, read-only",
    "webui/status/jobs.py": "the names the job list's filter offers, and a job's harvest id for its files and "
                            "thumbnails",
    "webui/system/users.py": "the users table's column lengths the add-user form shows and checks",
    "webui/system/views.py": "the overview page's counts",
}


def imports_the_schema(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "harvestdef.db.schema":
                return True
            if node.module == "harvestdef.db" and any(alias.name == "schema" for alias in node.names):
                return True
        elif isinstance(node, ast.Import) and any(alias.name == "harvestdef.db.schema" for alias in node.names):
            return True
    return False


def test_only_the_listed_modules_import_the_schema_outside_its_owners():
    importers = {str(path.relative_to(ROOT)) for package in ("harvestdef", "scheduler", "harvester", "webui")
                 for path in sorted((ROOT / package).rglob("*.py"))
                 if not str(path.relative_to(ROOT)).startswith(OWNERS) and imports_the_schema(path)}
    unlisted = sorted(importers - set(MAY_IMPORT_THE_SCHEMA))
    assert not unlisted, ("these modules import harvestdef.db.schema; use a repository, or add them to "
                          f"MAY_IMPORT_THE_SCHEMA with the reason and say it in their docstring: {unlisted}")
    gone = sorted(set(MAY_IMPORT_THE_SCHEMA) - importers)
    assert not gone, f"these modules no longer import the schema; take them off MAY_IMPORT_THE_SCHEMA: {gone}"
