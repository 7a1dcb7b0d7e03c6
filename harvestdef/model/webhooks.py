"""Webhooks: what an admin defines (a URL, the events it wants, a shared secret, active or not), and the life
of one delivery of one event to one webhook.

The nouns and their rules only. The rows are kept by harvestdef/repositories/webhooks.py; an event is
recorded by harvestdef/repositories/webhookevents.py in the transaction of what it announces, one delivery
per active webhook that wants it; the leading scheduler sends them (scheduler/webhooks.py). Nothing here
opens a connection or a socket.

A delivery's state moves by one table (TRANSITIONS): it is written ``pending``; each attempt that fails
leaves it pending with its next try ``retry_delay`` later, until ``delivered`` (a 2xx answer) or ``failed``
(the attempts ran out, or its webhook was deactivated or deleted). An admin may send a failed one again,
which makes it pending with its attempts counted from nothing.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from harvestdef.errors import FieldError
from harvestdef.phrases import N_, Phrase, phrase


class WebhookEvent(StrEnum):
    """What a webhook can ask to be told of; the value is the ``event`` of the delivered JSON."""

    JOB_FAILED = "job_failed"
    HARVEST_RUN_DONE = "harvest_run_done"
    HARVEST_DEACTIVATED = "harvest_deactivated"
    CONTROLLER_LOST = "controller_lost"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {WebhookEvent.JOB_FAILED: "a job failed",
           WebhookEvent.HARVEST_RUN_DONE: "a harvest run is done (none of its jobs is NEW, SUBMITTED or STARTED)",
           WebhookEvent.HARVEST_DEACTIVATED: "a harvest definition was deactivated (its job generation failed)",
           WebhookEvent.CONTROLLER_LOST: "a harvest controller went silent while it ran a job"}

# delivery states
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
DELIVERY_STATES = (PENDING, DELIVERED, FAILED)
# The only moves of a delivery's state: a pending one is tried again (pending), or settled; a failed one may
# be sent again by an admin; a delivered one stays so.
TRANSITIONS: Mapping[str, frozenset[str]] = {PENDING: frozenset({PENDING, DELIVERED, FAILED}),
                                             DELIVERED: frozenset(), FAILED: frozenset({PENDING})}

MIN_SECRET_LENGTH, MAX_SECRET_LENGTH = 16, 200
MAX_URL_LENGTH = 2000
SECRET_HINT_LENGTH = 4


@dataclass(frozen=True)
class Webhook:
    """A webhook as stored. ``secret`` is needed to sign deliveries, so it is kept as given; pages and API
    answers show ``secret_hint`` only."""

    webhook_id: int
    name: str
    url: str
    events: tuple[WebhookEvent, ...]
    secret: str
    isactive: bool
    created: datetime
    edition: int

    @property
    def secret_hint(self) -> str:
        return secret_hint(self.secret)

    def wants(self, event: WebhookEvent) -> bool:
        return self.isactive and event in self.events


@dataclass(frozen=True)
class WebhookDelivery:
    """One event for one webhook, and how its sending went. ``document`` is the event's JSON as recorded;
    ``url`` the address of its last attempt (its webhook's when it was recorded, before any)."""

    delivery_id: int
    webhook_id: int
    webhook_name: str | None  # None: the webhook has been deleted since
    event: WebhookEvent
    url: str
    document: dict[str, Any]
    created: datetime
    state: str
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None  # the receiver's HTTP status; None when it gave none (refused, timed out)
    last_error: str | None


def secret_hint(secret: str) -> str:
    """What is shown of a secret after it is saved: its length and its last characters."""
    return f"{len(secret)} characters, ending …{secret[-SECRET_HINT_LENGTH:]}"


def retry_delay(attempts: int, first: float, longest: float) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt: ``first``, doubling with each further
    failure, never more than ``longest``."""
    return min(first * 2 ** max(attempts - 1, 0), longest)


def check_url(value: str, field: str = "url") -> str:
    """A webhook's address: http or https, with a host; the reason named otherwise. Credentials in the
    address are refused (they would not be sent: put a token in the path or query instead), and so is a
    fragment (never sent either)."""
    url = value.strip()
    if not url:
        raise FieldError(field, phrase(N_("is required: the http:// or https:// address that receives the events")))
    if len(url) > MAX_URL_LENGTH:
        raise FieldError(field, phrase(N_("is %(length)s characters long; at most %(limit)s"), length=len(url),
                                       limit=MAX_URL_LENGTH))
    if any(c in url for c in string.whitespace) or not url.isprintable() or not url.isascii():
        raise FieldError(field, phrase(N_("%(url)s contains spaces or characters a URL cannot hold (percent-encode "
                                          "them)"), url=repr(url[:80])))
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"{parts.scheme}:" if parts.scheme else phrase(N_("no scheme"))
        raise FieldError(field, phrase(N_("%(url)s must start with http:// or https://, not %(scheme)s"),
                                       url=repr(url[:80]), scheme=scheme))
    if not parts.hostname:
        raise FieldError(field, phrase(N_("%(url)s has no host"), url=repr(url[:80])))
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
    except ValueError:
        raise FieldError(field, _bad_port(url)) from None
    if parts.port == 0:
        raise FieldError(field, _bad_port(url))
    if parts.username is not None or parts.password is not None:
        raise FieldError(field, phrase(N_("must not carry a user name or password (they are not sent); put a token "
                                          "in the path or query, or check the signature instead")))
    if parts.fragment or url.endswith("#"):
        raise FieldError(field, phrase(N_("%(url)s has a #fragment, which is never sent; leave it out"),
                                       url=repr(url[:80])))
    return url


def _bad_port(url: str) -> Phrase:
    return phrase(N_("%(url)s has a port that is not a number from 1 to 65535"), url=repr(url[:80]))


def check_events(values: Iterable[str], field: str = "events") -> tuple[WebhookEvent, ...]:
    """The events a webhook wants, in their declared order, at least one; an unknown one named."""
    wanted: set[WebhookEvent] = set()
    known = ", ".join(event.value for event in WebhookEvent)
    for value in values:
        text = value.strip().lower() if isinstance(value, str) else value
        try:
            wanted.add(WebhookEvent(text))
        except ValueError:
            raise FieldError(field, phrase(N_("%(value)s is not an event; choose from %(known)s"),
                                           value=repr(str(value)[:80]), known=known)) from None
    if not wanted:
        raise FieldError(field, phrase(N_("choose at least one event: %(known)s"), known=known))
    return tuple(event for event in WebhookEvent if event in wanted)


def check_secret(value: str, field: str = "secret") -> str:
    """A shared secret: MIN_SECRET_LENGTH to MAX_SECRET_LENGTH printable characters without spaces at either
    end (a secret pasted with a newline would sign with it)."""
    if value != value.strip():
        raise FieldError(field, phrase(N_("begins or ends with a space or line break; the receiver would have to "
                                          "sign with it too")))
    if len(value) < MIN_SECRET_LENGTH:
        raise FieldError(field, phrase(N_("needs at least %(limit)s characters (it has %(length)s); a long random "
                                          "one is best"), limit=MIN_SECRET_LENGTH, length=len(value)))
    if len(value) > MAX_SECRET_LENGTH:
        raise FieldError(field, phrase(N_("has %(length)s characters; at most %(limit)s"), length=len(value),
                                       limit=MAX_SECRET_LENGTH))
    if not value.isprintable():
        raise FieldError(field, phrase(N_("contains characters that cannot be typed (control characters)")))
    return value


__all__ = ["DELIVERED", "DELIVERY_STATES", "FAILED", "PENDING", "TRANSITIONS", "WebhookDelivery", "Webhook",
           "WebhookEvent", "check_events", "check_secret", "check_url", "retry_delay", "secret_hint"]
