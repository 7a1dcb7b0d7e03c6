"""Whether a database error means "the harvest database does not answer for now", and the sentence for it.

A lock that another writer held past harvestsuite.database.lockTimeout, a statement the server cancelled
or timed out, a server that refused or dropped the connection: none is the caller's fault, none is a bug,
and each is over once the other writer or the server is done. ``unavailability`` tells those apart from
every other error and gives the error of ours that says so (DatabaseBusyError, DatabaseUnavailableError),
so that the web UI answers 503 with the reason and the scheduler logs it and tries again. It reads the
driver's error code (psycopg's SQLSTATE) or, for SQLite, which has none for these, its message.

It never decides what to do: the boundaries that translate errors (webui/api/errors.py,
harvestdef.repositories.base.database_errors) call it.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from harvestdef.errors import DatabaseBusyError, DatabaseError, DatabaseUnavailableError, causes

# PostgreSQL's SQLSTATEs of a lock or a statement that waited too long, and of a server going away
_BUSY_SQLSTATES = {"55P03": "a lock another writer holds was not granted within the lock timeout",
                   "57014": "the statement was cancelled (statement timeout)",
                   "40P01": "it was chosen as the victim of a deadlock"}
_GONE_SQLSTATE_CLASSES = ("08",)  # connection exceptions
_GONE_SQLSTATES = {"57P01", "57P02", "57P03"}  # admin or crash shutdown, cannot connect now
# SQLite says these in its message only
_SQLITE_BUSY = ("database is locked", "database table is locked")
_SQLITE_GONE = ("unable to open database file", "disk i/o error")


def unavailability(error: BaseException) -> DatabaseError | None:
    """DatabaseBusyError or DatabaseUnavailableError (with the reason) when ``error``, or an error it was
    raised from, is the database not answering for now; None for any other error."""
    for current in causes(error):
        if isinstance(current, DatabaseBusyError | DatabaseUnavailableError):
            return current
        if isinstance(current, SQLAlchemyError):
            found = _of_driver_error(current)
            if found is not None:
                return found
    return None


def _of_driver_error(error: SQLAlchemyError) -> DatabaseError | None:
    original = error.orig if isinstance(error, DBAPIError) else None
    if original is None:
        return None
    if isinstance(original, sqlite3.Error):
        text = str(original).lower()
        if any(words in text for words in _SQLITE_BUSY):
            return DatabaseBusyError("the harvest database is busy: another writer held it locked past "
                                     "harvestsuite.database.lockTimeout; nothing was changed, try again shortly")
        if any(words in text for words in _SQLITE_GONE):
            return DatabaseUnavailableError(f"the harvest database cannot be opened now ({original}); nothing "
                                            f"was changed, try again shortly")
        return None
    sqlstate = getattr(original, "sqlstate", None)
    if sqlstate in _BUSY_SQLSTATES:
        return DatabaseBusyError(f"the harvest database is busy: {_BUSY_SQLSTATES[sqlstate]}; nothing was "
                                 f"changed, try again shortly")
    connection_failed = error.connection_invalidated or sqlstate in _GONE_SQLSTATES or (
        sqlstate is not None and sqlstate.startswith(_GONE_SQLSTATE_CLASSES))
    if connection_failed or (sqlstate is None and type(original).__name__ == "OperationalError"):
        # psycopg's OperationalError without a SQLSTATE: the server refused or dropped the connection
        first_line = str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
        return DatabaseUnavailableError(f"the harvest database does not answer ({first_line}); nothing was "
                                        f"changed, try again shortly")
    return None
