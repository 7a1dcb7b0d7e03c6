"""The errors of the message contracts, the ``Message`` base class and the schema version.

Kept apart from the message classes and the codec so both can import it without a cycle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harvestdef.errors import ValidationError

#: (major, minor) of the wire schema this side speaks. A change of major is incompatible and refused with
#: MessageVersionError; a newer minor only adds fields, which older readers ignore. 1.1 added
#: DomainStats.nothing_harvested, the JobEvent message and CrawlStatus.store_outage; 1.2
#: HarvesterStatus.heartbeat_interval; 1.3 CrawlProgress.crawl_log_tail and CrawlProgress.is_heritrix_console;
#: 1.4 the LiveChange, LiveChangeResult and CrawlTally messages and HarvesterStatus.min_space_left, and
#: (a field with a default, so within 1.4) CrawlStatus.qa_summary; 1.5 CrawlStatus.crawl_end; 1.6
#: PreHarvestMetadata.deduplication_sources; 1.7 NothingHarvested.other_seeds_failed.
SCHEMA_VERSION: tuple[int, int] = (1, 7)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWN_MAX = 60  # characters of an offending value quoted in an error


class MessageError(ValidationError):
    """A message that cannot be encoded or was received malformed.

    ``path`` is the JSON path of the offending value (``body.domain_report.domains[3].bytes``; empty when
    the message as a whole is wrong), ``reason`` says what is wrong; ``str()`` is ``"<path>: <reason>"``.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason

    def under(self, prefix: str) -> MessageError:
        """The same error seen from the enclosing object at ``prefix``."""
        return MessageError(join_path(prefix, self.path), self.reason)


class MessageVersionError(MessageError):
    """The sender speaks another major version of the schema; both versions are in the text."""

    def __init__(self, version: tuple[int, int]) -> None:
        ours = "{}.{}".format(*SCHEMA_VERSION)
        super().__init__(
            "version",
            f"message schema version {version[0]}.{version[1]} is not supported: this side speaks {ours} "
            f"(major version {SCHEMA_VERSION[0]} only)",
        )
        self.version = version


@dataclass(frozen=True, slots=True)
class Message:
    """Base of every message type sent between scheduler, harvest controllers and the monitor.

    Its wire name is the class name (see ``MESSAGE_TYPES``). The time it was sent travels in the envelope,
    not in the message: ``decode_with_time`` returns it.
    """


def join_path(prefix: str, path: str) -> str:
    """``body`` + ``status`` -> ``body.status``; ``body.seeds`` + ``[2]`` -> ``body.seeds[2]``."""
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def key_path(prefix: str, key: str) -> str:
    """The path of a dict entry: ``.name`` for identifiers, ``["københavn.dk"]`` for anything else."""
    if _IDENTIFIER.fullmatch(key):
        return join_path(prefix, key)
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{prefix}["{escaped}"]'


def shown(value: Any) -> str:
    """An offending value as it appeared in the JSON, shortened."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # keep a lone surrogate escaped, so the error itself can be logged
        text = json.dumps(value)
    except (TypeError, ValueError):
        try:
            text = repr(value)
        except ValueError:  # an int beyond Python's digit limit for str()
            text = f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."
