"""The names of HarvestSuite's queues, all prefixed with the environment name (``common.environmentName``)
so that several installations can share one broker (docs/messages.md, Queues)."""

from __future__ import annotations


class QueueNames:
    """Queue names of one environment, e.g. ``QueueNames("PROD").jobs("snapshot") == "PROD.jobs.SNAPSHOT"``."""

    def __init__(self, environment_name: str) -> None:
        self.environment_name = environment_name

    def jobs(self, channel: str) -> str:
        """The queue of DoOneCrawl messages of one harvest channel (FOCUSED, SNAPSHOT, ...)."""
        return f"{self.environment_name}.jobs.{channel.upper()}"

    @property
    def scheduler(self) -> str:
        """Where controllers send claims, registrations and status reports to the scheduler."""
        return f"{self.environment_name}.scheduler"

    @property
    def monitor(self) -> str:
        """Progress and frontier reports for the monitor pages."""
        return f"{self.environment_name}.monitor"

    @property
    def dead_letter(self) -> str:
        """Messages that failed validation, with the reason in their ``x-reason`` header."""
        return f"{self.environment_name}.deadletter"

    def controller(self, controller_id: str) -> str:
        """The reply queue of one harvest controller: answers to its registrations and claims."""
        return f"{self.environment_name}.controller.{controller_id}"

    def control(self, controller_id: str) -> str:
        """The control queue of one harvest controller: the live changes of the job it crawls, named in its
        claim grant. A queue of its own, so that a controller waiting for a claim answer never takes (and
        drops) a change, and a change waits there while its controller is away."""
        return f"{self.environment_name}.control.{controller_id}"

    def __repr__(self) -> str:
        return f"QueueNames({self.environment_name!r})"
