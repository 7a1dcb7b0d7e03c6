"""The stable id of a harvest controller.

The id names the controller in every message it sends and is part of its control queue's name, so it must
survive restarts and differ between two controllers on one machine. It is, in order:
1. the configured ``harvestsuite.harvester.controllerId``, when set;
2. else the id kept in ``<serverDir>/controller-id``;
3. else ``<short host name>-<first 8 hex digits of the SHA-1 of the resolved serverDir>``, written to that
   file at first start. Two controllers on one host need different serverDirs anyway (their job
   directories live there), so they get different ids.
The derivation is deterministic, so two processes racing on a fresh serverDir write the same id.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from pathlib import Path

from harvestdef.errors import ValidationError
from harvestdef.files import write_atomically
from harvestdef.settings import HarvesterSettings

ID_FILE_NAME = "controller-id"
MAX_LENGTH = 100
_VALID_ID = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_LENGTH}}}")
_INVALID_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")
_RULE = f"1 to {MAX_LENGTH} characters, each a letter, a digit, '-', '_' or '.' (it becomes part of a queue name)"
_HASH_DIGITS = 8


def controller_id(server_dir: str | Path, configured: str = "", host: str | None = None) -> str:
    """The stable id of the controller whose job directories live in ``server_dir``.

    ``host`` defaults to ``socket.gethostname()``; only its first label is used.
    :raise ValidationError: the configured id or the one in the id file breaks the rule (it is named).
    """
    if configured:
        if not is_valid_controller_id(configured):
            raise ValidationError(
                f"controller id {configured!r} (setting harvestsuite.harvester.controllerId) is not valid: "
                f"it must be {_RULE}")
        return configured
    directory = Path(server_dir)
    id_file = directory / ID_FILE_NAME
    if id_file.exists():
        return _read_id_file(id_file)
    directory.mkdir(parents=True, exist_ok=True)
    derived = derive_controller_id(directory, host)
    write_atomically(id_file, (derived + "\n").encode("utf-8"))
    return derived


def controller_id_from_settings(settings: HarvesterSettings) -> str:
    """``controller_id`` for the configured serverDir and controllerId."""
    return controller_id(settings.serverDir, settings.controllerId)


def derive_controller_id(server_dir: str | Path, host: str | None = None) -> str:
    """``<short host name>-<8 hex digits of SHA-1 of the resolved server_dir>``, without touching any file."""
    digest = hashlib.sha1(os.fsencode(Path(server_dir).resolve())).hexdigest()[:_HASH_DIGITS]
    short_host = (socket.gethostname() if host is None else host).split(".", 1)[0]
    sanitised = _INVALID_CHARACTERS.sub("-", short_host).strip("-.") or "host"
    return f"{sanitised[: MAX_LENGTH - _HASH_DIGITS - 1]}-{digest}"


def is_valid_controller_id(value: str) -> bool:
    """1 to 100 letters, digits, '-', '_' or '.'."""
    return _VALID_ID.fullmatch(value) is not None


def _read_id_file(id_file: Path) -> str:
    try:
        value = id_file.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise ValidationError(f"{id_file}: not UTF-8 text; fix it or delete it to derive a new id") from None
    if not is_valid_controller_id(value):
        raise ValidationError(
            f"{id_file}: {value!r} is not a valid controller id: it must be {_RULE}; "
            "fix it or delete the file to derive a new id")
    return value


