"""The leading scheduler's hearing (harvestdef.model.controllers.Hearing), one row of scheduler_hearing: the
scheduler writes it as its broker connection goes and comes back; the web UI reads it to judge a
controller's silence as the scheduler does."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert, select

from harvestdef.db import schema as s
from harvestdef.model.controllers import HEARING_ALL_ALONG, Hearing

_ROW = "scheduler"
_hearing = s.scheduler_hearing


def read_hearing(conn: Connection) -> Hearing:
    """The hearing the leading scheduler wrote last; hearing all along if it wrote none."""
    row = conn.execute(select(_hearing.c.deaf_since, _hearing.c.hearing_since)
                       .where(_hearing.c.name == _ROW)).first()
    return HEARING_ALL_ALONG if row is None else Hearing(row.deaf_since, row.hearing_since)


def write_hearing(conn: Connection, hearing: Hearing, holder: str, now: datetime) -> None:
    """Record ``hearing`` as the leading scheduler's (``holder``), replacing what an earlier leader wrote."""
    conn.execute(delete(_hearing).where(_hearing.c.name == _ROW))
    conn.execute(insert(_hearing).values(name=_ROW, holder=holder, deaf_since=hearing.deaf_since,
                                         hearing_since=hearing.hearing_since, changed_at=now))
