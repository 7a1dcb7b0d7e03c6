"""Runs asked for outside the schedule ("run now") and job-generation previews asked for from the web UI.

Both are requests the web UI writes and the scheduler carries out at its next tick, because readiness and
job generation are the scheduler's (docs/architecture.md, One harvest, from definition to historyinfo):

* A run request (harvest_run_requests, one row per harvest at most) makes the harvest ready at the next
  tick whatever its schedule or its active flag, as long as the rest of readiness holds (a controller
  serves its channel; a snapshot's previous step is done and its index ready). The tick deletes the row in
  the transaction that writes the run's jobs, and a failed run deletes it with the deactivation, so one
  request makes at most one run. A second request while one waits is a conflict, never a second run. A
  snapshot harvest runs once: one that has run cannot be asked to run again. Asking and withdrawing are
  audited (table harvest_run_requests, key the harvest id).
* A preview request (harvest_previews) is the harvest's row with ``computed_at`` empty until the tick has
  made the preview; asking again replaces it. The tick writes its answer only to the request it read
  (same ``requested_at``), so a newer request is never answered by an older computation. A preview changes
  nothing and is not audited.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, exists, insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import ConflictError, NotFoundError, ValidationError
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import SYSTEM_ACTOR, record_audit
from harvestdef.times import utc_text

MAX_ERROR = 2000


@dataclass(frozen=True)
class RunRequest:
    harvest_id: int
    requested_at: datetime
    requested_by: str


@dataclass(frozen=True)
class PreviewRequest:
    """A preview asked for; ``preview`` (the scheduler's JSON, decoded) or ``error`` once it is made."""

    harvest_id: int
    requested_at: datetime
    requested_by: str
    computed_at: datetime | None
    preview: dict[str, Any] | None
    error: str | None

    @property
    def is_waiting(self) -> bool:
        return self.computed_at is None


class RunRequestRepository:
    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def _harvest_id(self, name: str) -> int:
        harvest_id = self.conn.scalar(select(s.harvestdefinitions.c.harvest_id)
                                      .where(s.harvestdefinitions.c.name == name))
        if harvest_id is None:
            raise NotFoundError("harvest definition", name)
        return int(harvest_id)

    # ------------------------------------------------------------ run now
    def find(self, harvest_id: int) -> RunRequest | None:
        r = s.harvest_run_requests
        row = self.conn.execute(select(r).where(r.c.harvest_id == harvest_id)).first()
        return None if row is None else RunRequest(row.harvest_id, row.requested_at, row.requested_by)

    def request_run(self, name: str, now: datetime | None = None) -> RunRequest:
        """Ask for a run of harvest ``name`` at the next tick. ConflictError if one is asked for already;
        ValidationError if the harvest cannot make one (a snapshot that has run, a selective harvest
        without configurations)."""
        harvest_id = self._harvest_id(name)
        hd, full = s.harvestdefinitions, s.fullharvests
        numevents = self.conn.scalar(select(hd.c.numevents).where(hd.c.harvest_id == harvest_id)) or 0
        is_snapshot = self.conn.scalar(select(exists().where(full.c.harvest_id == harvest_id)))
        if is_snapshot and numevents:
            raise ValidationError(phrase(N_("snapshot harvest %(name)s has run; a snapshot runs once, so make a new "
                                            "snapshot harvest that continues it"), name=repr(name)))
        if not is_snapshot and not self.conn.scalar(select(exists().where(
                s.harvest_configs.c.harvest_id == harvest_id))):
            raise ValidationError(phrase(N_("harvest %(name)s has no domain configurations: a run would make no "
                                            "jobs"), name=repr(name)))
        waiting = self.find(harvest_id)
        if waiting is not None:
            raise ConflictError("run request of harvest definition", name, sentence=phrase(
                N_("a run of %(name)s is asked for already: %(user)s asked at %(at)s; the scheduler's next tick "
                   "makes it"), name=repr(name), user=waiting.requested_by, at=utc_text(waiting.requested_at)))
        request = RunRequest(harvest_id, now or utcnow(), self.actor)
        self.conn.execute(insert(s.harvest_run_requests).values(
            harvest_id=harvest_id, requested_at=request.requested_at, requested_by=request.requested_by))
        record_audit(self.conn, self.actor, "harvest_run_requests", harvest_id, "insert", None,
                     {"harvest_id": harvest_id, "requested_at": request.requested_at, "requested_by": self.actor})
        return request

    def withdraw(self, name: str) -> RunRequest:
        """Withdraw the run asked for (before the tick has taken it); NotFoundError if there is none."""
        harvest_id = self._harvest_id(name)
        request = self.find(harvest_id)
        if request is None:
            raise NotFoundError("run request of harvest definition", name)
        self._delete(request, f"withdrawn by {self.actor}")
        return request

    def take(self, harvest_id: int, outcome: str) -> RunRequest | None:
        """The scheduler takes the request (in the transaction of the run it made, or of the deactivation
        after a failed one): deleted, audited with ``outcome``. None if there was none."""
        request = self.find(harvest_id)
        if request is not None:
            self._delete(request, outcome)
        return request

    def _delete(self, request: RunRequest, outcome: str) -> None:
        r = s.harvest_run_requests
        self.conn.execute(delete(r).where(r.c.harvest_id == request.harvest_id))
        record_audit(self.conn, self.actor, "harvest_run_requests", request.harvest_id, "delete",
                     {"harvest_id": request.harvest_id, "requested_at": request.requested_at,
                      "requested_by": request.requested_by}, {"outcome": outcome})

    # ------------------------------------------------------------ previews
    def request_preview(self, name: str, now: datetime | None = None) -> PreviewRequest:
        """Ask for a preview of the next run of ``name``; replaces an earlier one, made or not."""
        harvest_id = self._harvest_id(name)
        p = s.harvest_previews
        requested_at = now or utcnow()
        values = {"requested_at": requested_at, "requested_by": self.actor, "computed_at": None,
                  "preview": None, "error": None}
        if self.conn.scalar(select(exists().where(p.c.harvest_id == harvest_id))):
            self.conn.execute(update(p).where(p.c.harvest_id == harvest_id).values(**values))
        else:
            self.conn.execute(insert(p).values(harvest_id=harvest_id, **values))
        return PreviewRequest(harvest_id, requested_at, self.actor, None, None, None)

    def preview_of(self, harvest_id: int) -> PreviewRequest | None:
        p = s.harvest_previews
        row = self.conn.execute(select(p).where(p.c.harvest_id == harvest_id)).first()
        if row is None:
            return None
        return PreviewRequest(row.harvest_id, row.requested_at, row.requested_by, row.computed_at,
                              json.loads(row.preview) if row.preview else None, row.error)

    def waiting_previews(self) -> list[PreviewRequest]:
        """The previews asked for and not made yet, oldest first."""
        p = s.harvest_previews
        rows = self.conn.execute(select(p.c.harvest_id).where(p.c.computed_at.is_(None))
                                 .order_by(p.c.requested_at, p.c.harvest_id)).all()
        return [preview for (harvest_id,) in rows if (preview := self.preview_of(harvest_id)) is not None]

    def record_preview(self, request: PreviewRequest, computed_at: datetime, preview: dict[str, Any] | None,
                       error: str | None = None) -> bool:
        """Store the preview made for ``request``; False (nothing written) if it was asked for again since."""
        p = s.harvest_previews
        written = self.conn.execute(
            update(p).where(p.c.harvest_id == request.harvest_id, p.c.requested_at == request.requested_at,
                            p.c.computed_at.is_(None))
            .values(computed_at=computed_at, preview=None if preview is None else json.dumps(preview),
                    error=None if error is None else error[:MAX_ERROR])).rowcount
        return written == 1
