"""The names of a Heritrix 3 job directory and of each launch in it: what the bundled engine writes
(harvester/engine/) and the harvest controller reads (harvester/jobdir.py and post-processing), as a real
Heritrix 3 writes them (https://heritrix.readthedocs.io/en/latest/operating.html)::

    JOB/crawler-beans.cxml   seeds.txt   job.log   action/   checkpoints/   latest -> LAUNCH
    JOB/LAUNCH/crawler-beans.cxml   logs/crawl.log ...   warcs/   reports/*-report.txt   actions-done/   state/

Names only: nothing here touches a file.
"""

from __future__ import annotations

# the job directory
PRIMARY_CONFIG = "crawler-beans.cxml"
SEEDS = "seeds.txt"
JOB_LOG = "job.log"
ACTION_DIR = "action"
CHECKPOINTS_DIR = "checkpoints"
LATEST = "latest"  # a link to the newest launch directory
# The bundled engine's own addition, no Heritrix 3 file: written at engine shutdown once a checkpointed crawl
# has ended (harvester/engine/rest/jobregistry.py, CrawlJob.stop_for_shutdown), read by the harvest controller.
SHUTDOWN_CHECKPOINT = "shutdown-checkpoint.json"

# a launch directory
LOGS_DIR = "logs"
WARCS_DIR = "warcs"  # the WARC writer's default storePaths
REPORTS_DIR = "reports"
ACTIONS_DONE_DIR = "actions-done"
STATE_DIR = "state"
REPORT_SUFFIX = "-report.txt"

# the launch's logs, in LOGS_DIR
CRAWL_LOG = "crawl.log"
PROGRESS_LOG = "progress-statistics.log"
ALERTS_LOG = "alerts.log"
LAUNCH_LOGS = (CRAWL_LOG, PROGRESS_LOG, ALERTS_LOG, "uri-errors.log", "runtime-errors.log", "nonfatal-errors.log")
