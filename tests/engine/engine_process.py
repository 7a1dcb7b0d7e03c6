"""The crawl engine as a real process for tests: ``harvestsuite engine`` on a free port over HTTPS.

``EngineProcess`` starts the command with a temporary jobs dir, reads the URL it prints, hands out
``HeritrixClient``s that pin the engine's self-signed certificate, and stops it with SIGTERM (the way an
operator or the harvest controller does). ``write_job`` makes a job directory with a small crawler-beans.cxml
and seeds for the local test site.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from harvester.heritrix import HeritrixClient

USER = "admin"
PASSWORD = "s3cret-test"
LISTENING = re.compile(r"Engine listening at (https://\S+)/engine")
START_TIMEOUT = 30.0


class EngineProcess:
    """One engine process; a context manager that stops it on exit."""

    def __init__(self, jobs_dir: Path, hosts_file: Path | None = None, auth_failure_delay: float = 0.2,
                 password: str = PASSWORD, allow_destinations: str = "") -> None:
        self.jobs_dir = jobs_dir
        # harvestsuite.network.allowDestinations of the engine (the names of its hosts file are allowed anyway)
        self.allow_destinations = allow_destinations
        self.hosts_file = hosts_file
        self.auth_failure_delay = auth_failure_delay
        self.password = password
        self.base_url = ""
        self.output: list[str] = []
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    def start(self) -> EngineProcess:
        # The installed console command, as an operator runs it; the module form where it is not on PATH.
        search_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        harvestsuite = shutil.which("harvestsuite", path=search_path)
        prefix = [harvestsuite, "engine"] if harvestsuite else [sys.executable, "-m", "harvester.engine.cli"]
        command = [*prefix, "--jobs-dir", str(self.jobs_dir),
                   "--port", "0", "--auth", f"{USER}:{self.password}",
                   "--auth-failure-delay", str(self.auth_failure_delay)]
        if self.hosts_file is not None:
            command += ["--hosts", str(self.hosts_file)]
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        stderr = (self.jobs_dir.parent / f"{self.jobs_dir.name}-engine-stderr.log").open("a", encoding="utf-8")
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1",
                                              "HARVESTSUITE__HARVESTSUITE__NETWORK__ALLOWDESTINATIONS":
                                                  self.allow_destinations})
        stderr.close()
        threading.Thread(target=self._read_output, daemon=True).start()
        while True:
            try:
                line = self._lines.get(timeout=START_TIMEOUT)
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"engine did not start within {START_TIMEOUT} s: {self.output}") from None
            if line is None:
                raise RuntimeError(f"engine exited at start ({self._process.wait()}): {self.stderr_text()}")
            match = LISTENING.search(line)
            if match:
                self.base_url = match.group(1)
                return self

    def _read_output(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.output.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def stderr_text(self) -> str:
        path = self.jobs_dir.parent / f"{self.jobs_dir.name}-engine-stderr.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    @property
    def pid(self) -> int:
        assert self._process is not None, "the engine is not started"
        return self._process.pid

    @property
    def cert_file(self) -> Path:
        return self.jobs_dir / "engine-cert.pem"

    def client(self, password: str | None = None, representation: str = "application/xml") -> HeritrixClient:
        return HeritrixClient(self.base_url, USER, password or self.password, ca_file=self.cert_file,
                              timeout=30.0, representation=representation)

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM, then wait; returns the exit status."""
        if self._process is None:
            return 0
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise

    def __enter__(self) -> EngineProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def crawler_beans(*, max_hops: int = 3, min_delay_ms: int = 0, max_time_seconds: int = 0,
                  reject_regex: str = ".*/trap/.*", extra_beans: str = "") -> str:
    """A small crawler-beans.cxml: seeds from seeds.txt, SURT scope, hop limit, polite delay, WARC writer."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <bean id="metadata" class="org.archive.modules.CrawlMetadata">
    <property name="jobName" value="enginetest"/>
    <property name="operatorContactUrl" value="http://netarkivet.example/"/>
    <property name="robotsPolicyName" value="obey"/>
  </bean>
  <bean id="seeds" class="org.archive.modules.seeds.TextSeedModule">
    <property name="textSource">
      <bean class="org.archive.spring.ConfigFile"><property name="path" value="seeds.txt"/></bean>
    </property>
    <property name="sourceTagSeeds" value="true"/>
  </bean>
  <bean id="scope" class="org.archive.modules.deciderules.DecideRuleSequence">
    <property name="rules">
      <list>
        <bean class="org.archive.modules.deciderules.RejectDecideRule"/>
        <bean class="org.archive.modules.deciderules.surt.SurtPrefixedDecideRule"/>
        <bean class="org.archive.modules.deciderules.TooManyHopsDecideRule">
          <property name="maxHops" value="{max_hops}"/>
        </bean>
        <bean class="org.archive.modules.deciderules.MatchesListRegexDecideRule">
          <property name="decision" value="REJECT"/>
          <property name="regexList"><list><value>{reject_regex}</value></list></property>
        </bean>
        <bean class="org.archive.modules.deciderules.PrerequisiteAcceptDecideRule"/>
      </list>
    </property>
  </bean>
  <bean id="crawlController" class="org.archive.crawler.framework.CrawlController">
    <property name="maxToeThreads" value="4"/>
  </bean>
  <bean id="crawlLimiter" class="org.archive.crawler.framework.CrawlLimitEnforcer">
    <property name="maxTimeSeconds" value="{max_time_seconds}"/>
  </bean>
  <bean id="fetchHttp" class="org.archive.modules.fetcher.FetchHTTP">
    <property name="timeoutSeconds" value="3"/>
    <property name="soTimeoutMs" value="2000"/>
  </bean>
  <bean id="frontier" class="org.archive.crawler.frontier.BdbFrontier">
    <property name="maxRetries" value="1"/>
    <property name="retryDelaySeconds" value="0"/>
  </bean>
  <bean id="disposition" class="org.archive.crawler.postprocessor.DispositionProcessor">
    <property name="delayFactor" value="0"/>
    <property name="minDelayMs" value="{min_delay_ms}"/>
    <property name="maxDelayMs" value="{max(min_delay_ms, 0)}"/>
  </bean>
  <bean id="statisticsTracker" class="org.archive.crawler.reporting.StatisticsTracker">
    <property name="intervalSeconds" value="1"/>
  </bean>
  <bean id="warcWriter" class="org.archive.modules.writer.WARCWriterProcessor">
    <property name="prefix" value="ENGINETEST"/>
  </bean>
  {extra_beans}
</beans>
"""


def write_job(directory: Path, seeds: list[str], cxml: str | None = None) -> Path:
    """A job directory holding crawler-beans.cxml and seeds.txt."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "crawler-beans.cxml").write_text(cxml if cxml is not None else crawler_beans(), encoding="utf-8")
    (directory / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
    return directory
