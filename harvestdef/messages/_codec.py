"""Encoding messages to bytes and decoding received bytes back into checked messages.

The checks are driven by the dataclass annotations (``typing.get_type_hints``), never written per class:
int (a JSON true/false is not an integer), float (integers accepted), str, bool, list[T], dict[str, T],
nested dataclasses, ``T | None`` and enums by member NAME. The codec does no I/O; transports hand it bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Union, get_args, get_origin, get_type_hints

from harvestdef.messages._base import (
    SCHEMA_VERSION,
    Message,
    MessageError,
    MessageVersionError,
    join_path,
    key_path,
    shown,
)
from harvestdef.messages._types import MESSAGE_TYPES

_VERSION = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})")


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    type: Any
    is_required: bool  # absent on the wire is an error
    has_default: bool  # absent on the wire leaves the dataclass default; else an optional field becomes None


def encode(message: Message, sent_at: datetime | None = None) -> bytes:
    """The wire form of ``message``: UTF-8 JSON ``{"type", "version", "sent", "body"}``.

    ``sent_at`` (timezone-aware; default now) is written in UTC with a ``Z``. A field whose value does not
    fit its annotation raises MessageError with its path, so a bad message fails at the sender.
    """
    cls = type(message)
    if MESSAGE_TYPES.get(cls.__name__) is not cls:
        raise TypeError(f"{cls.__name__} is not a message type; known: {', '.join(MESSAGE_TYPES)}")
    when = datetime.now(UTC) if sent_at is None else sent_at
    if when.utcoffset() is None:
        raise ValueError(f"sent_at must be timezone-aware, got {when!r}")
    document = {
        "type": cls.__name__,
        "version": "{}.{}".format(*SCHEMA_VERSION),
        "sent": _format_time(when),
        "body": _encode_object(message, cls, "body"),
    }
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def decode(data: bytes, expected: type | tuple[type, ...] | None = None) -> Message:
    """The message in ``data``, checked against its schema; see ``decode_with_time``."""
    return decode_with_time(data, expected)[0]


def decode_with_time(data: bytes, expected: type | tuple[type, ...] | None = None) -> tuple[Message, datetime]:
    """The message in ``data`` and the time it was sent (aware, UTC).

    :raise MessageVersionError: the sender speaks another major schema version.
    :raise MessageError: anything else wrong, with the JSON path of the value: not UTF-8, not a JSON object,
        unknown or missing type, a type not in ``expected``, a missing field or a value of the wrong type.
    Unknown fields at any level and a newer minor version are accepted and ignored.
    """
    document = _parse(data)
    version = _version(document)
    if version[0] != SCHEMA_VERSION[0]:
        raise MessageVersionError(version)
    cls = _message_class(document, expected)
    sent_at = _parse_time(_required(document, "sent", ""), "sent")
    return _decode_object(_required(document, "body", ""), cls, "body"), sent_at


# --- the envelope ------------------------------------------------------------------------------------------


def _parse(data: bytes) -> dict[str, Any]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"decode takes bytes, got {type(data).__name__}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError("", f"not UTF-8: {exc}") from None
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise MessageError("", f"not JSON: {exc}") from None
    except RecursionError:
        raise MessageError("", "not JSON this side can read: nested too deeply") from None
    if not isinstance(document, dict):
        raise MessageError("", f"expected a JSON object, got {shown(document)}")
    return document


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _version(document: dict[str, Any]) -> tuple[int, int]:
    value = _required(document, "version", "")
    match = _VERSION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise MessageError("version", f'expected a string "MAJOR.MINOR", got {shown(value)}')
    return int(match[1]), int(match[2])


def _message_class(document: dict[str, Any], expected: type | tuple[type, ...] | None) -> type[Message]:
    name = _required(document, "type", "")
    if not isinstance(name, str):
        raise MessageError("type", f"expected a string, got {shown(name)}")
    cls = MESSAGE_TYPES.get(name)
    if cls is None:
        raise MessageError("type", f"unknown message type {shown(name)}; known: {', '.join(MESSAGE_TYPES)}")
    if expected is not None and not issubclass(cls, expected):
        wanted = expected if isinstance(expected, tuple) else (expected,)
        names = ", ".join(t.__name__ for t in wanted)
        raise MessageError("type", f"expected {'one of ' if len(wanted) > 1 else ''}{names}, got {shown(name)}")
    return cls


def _required(document: dict[str, Any], name: str, path: str) -> Any:
    if name not in document:
        raise MessageError(join_path(path, name), "required field is missing")
    return document[name]


def _format_time(when: datetime) -> str:
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _parse_time(value: Any, path: str) -> datetime:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None or when.utcoffset() is None:
        raise MessageError(path, f"expected an ISO-8601 time with a zone (…Z), got {shown(value)}")
    return when.astimezone(UTC)


# --- the body, driven by the annotations -------------------------------------------------------------------
#
# Each type's decoder and encoder is built once from its annotation (``_decoder``, ``_encoder``, cached per
# type): a message costs the checks only, not the introspection of its class. A decoder takes the JSON
# value and returns the checked one; it raises MessageError with the path relative to the value, and each
# enclosing object, list or dict puts its own part in front (``MessageError.under``), so the paths are
# built only for the value that is wrong.

Coder = Callable[[Any], Any]


def _decode_object(value: Any, cls: type, path: str) -> Any:
    try:
        return _decoder(cls)(value)
    except MessageError as exc:
        raise exc.under(path) from None


def _encode_object(value: Any, cls: type, path: str) -> dict[str, Any]:
    try:
        return _encoder(cls)(value)
    except MessageError as exc:
        raise exc.under(path) from None


@functools.cache
def _field_specs(cls: type) -> tuple[_FieldSpec, ...]:
    hints = get_type_hints(cls)
    specs = []
    for field in dataclasses.fields(cls):
        has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        is_optional = _optional_inner(hints[field.name]) is not None
        specs.append(_FieldSpec(field.name, hints[field.name], not (has_default or is_optional), has_default))
    return tuple(specs)


def _optional_inner(tp: Any) -> Any:
    """T for ``T | None``, else None."""
    if get_origin(tp) not in (Union, types.UnionType):
        return None
    args = [arg for arg in get_args(tp) if arg is not type(None)]
    if len(args) != 1 or len(args) == len(get_args(tp)):
        raise TypeError(f"unsupported message field type {tp!r}: only T | None unions are")
    return args[0]


def _item_path(index: int | str) -> str:
    return f"[{index}]" if isinstance(index, int) else key_path("", index)


@functools.cache
def _decoder(tp: Any, declared: Any = None) -> Coder:
    """The decoder of values of type ``tp``; ``declared`` is the field's whole type when ``tp`` is T of
    T | None (the error then says "or null")."""
    inner = _optional_inner(tp)
    if inner is not None:
        decode_inner = _decoder(inner, tp)
        return lambda value: None if value is None else decode_inner(value)
    expected = _described(declared or tp)

    def mismatch(value: Any) -> MessageError:
        return MessageError("", f"expected {expected}, got {shown(value)}")

    origin = get_origin(tp)
    if tp is bool:
        def decode(value: Any) -> Any:
            if value is True or value is False:
                return value
            raise mismatch(value)
    elif tp is int:
        def decode(value: Any) -> Any:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            raise mismatch(value)
    elif tp is float:
        def decode(value: Any) -> Any:
            number = _finite_float(value)
            if number is None:
                raise mismatch(value)
            return number
    elif tp is str:
        def decode(value: Any) -> Any:
            if type(value) is not str:
                raise mismatch(value)
            _check_text(value, "")
            return value
    elif origin is list:
        (item_type,) = get_args(tp)
        decode_item = _decoder(item_type)

        def decode(value: Any) -> Any:
            if not isinstance(value, list):
                raise mismatch(value)
            items = []
            for index, item in enumerate(value):
                try:
                    items.append(decode_item(item))
                except MessageError as exc:
                    raise exc.under(_item_path(index)) from None
            return items
    elif origin is dict:
        _, item_type = get_args(tp)
        decode_item = _decoder(item_type)

        def decode(value: Any) -> Any:
            if not isinstance(value, dict):
                raise mismatch(value)
            items = {}
            for key, item in value.items():
                _check_text(key, "")
                try:
                    items[key] = decode_item(item)
                except MessageError as exc:
                    raise exc.under(_item_path(key)) from None
            return items
    elif isinstance(tp, type) and issubclass(tp, Enum):
        members = tp.__members__

        def decode(value: Any) -> Any:
            if isinstance(value, str) and value in members:
                return members[value]
            raise mismatch(value)
    elif dataclasses.is_dataclass(tp):
        decode = _object_decoder(tp, expected)
    else:
        raise TypeError(f"unsupported message field type {tp!r}")
    return decode


def _object_decoder(cls: type, expected: str) -> Coder:
    # (name, decoder, is_required, has_default) per field, built at the first use: the fields' own
    # decoders are then all defined, whatever the order the classes were declared in.
    specs: tuple[tuple[str, Coder, bool, bool], ...] | None = None

    def decode(value: Any) -> Any:
        nonlocal specs
        if not isinstance(value, dict):
            raise MessageError("", f"expected {expected}, got {shown(value)}")
        fields = specs
        if fields is None:  # built whole, then published by one assignment: threads never see a part
            fields = specs = tuple((spec.name, _decoder(spec.type), spec.is_required, spec.has_default)
                                   for spec in _field_specs(cls))
        arguments = {}
        for name, decode_field, is_required, has_default in fields:
            if name in value:
                try:
                    arguments[name] = decode_field(value[name])
                except MessageError as exc:
                    raise exc.under(name) from None
            elif is_required:
                raise MessageError(name, "required field is missing")
            elif not has_default:
                arguments[name] = None
        return cls(**arguments)  # a __post_init__ check raises MessageError with its path in the object

    return decode


@functools.cache
def _encoder(tp: Any, declared: Any = None) -> Coder:
    """The encoder of values of type ``tp`` into JSON values, checking each against the annotation."""
    inner = _optional_inner(tp)
    if inner is not None:
        encode_inner = _encoder(inner, tp)
        return lambda value: None if value is None else encode_inner(value)
    expected = _described(declared or tp)

    def mismatch(value: Any) -> MessageError:
        return MessageError("", f"cannot encode {type(value).__name__} {shown(value)} as {expected}")

    origin = get_origin(tp)
    if tp is bool:
        def encode(value: Any) -> Any:
            if value is True or value is False:
                return value
            raise mismatch(value)
    elif tp is int:
        def encode(value: Any) -> Any:
            if isinstance(value, int) and not isinstance(value, bool):
                return int(value)  # an int subclass (IntEnum) travels as a plain number
            raise mismatch(value)
    elif tp is float:
        def encode(value: Any) -> Any:
            number = _finite_float(value)
            if number is None:
                raise mismatch(value)
            return number
    elif tp is str:
        def encode(value: Any) -> Any:
            if not isinstance(value, str):
                raise mismatch(value)
            _check_text(value, "")
            return value
    elif origin is list:
        (item_type,) = get_args(tp)
        encode_item = _encoder(item_type)

        def encode(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise mismatch(value)
            items = []
            for index, item in enumerate(value):
                try:
                    items.append(encode_item(item))
                except MessageError as exc:
                    raise exc.under(_item_path(index)) from None
            return items
    elif origin is dict:
        _, item_type = get_args(tp)
        encode_item = _encoder(item_type)

        def encode(value: Any) -> Any:
            if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
                raise mismatch(value)
            items = {}
            for key, item in value.items():
                try:
                    items[key] = encode_item(item)
                except MessageError as exc:
                    raise exc.under(_item_path(key)) from None
            return items
    elif isinstance(tp, type) and issubclass(tp, Enum):
        def encode(value: Any) -> Any:
            if isinstance(value, tp):
                return value.name
            raise mismatch(value)
    elif dataclasses.is_dataclass(tp):
        encode = _object_encoder(tp)
    else:
        raise TypeError(f"unsupported message field type {tp!r}")
    return encode


def _object_encoder(cls: type) -> Coder:
    specs: tuple[tuple[str, Coder], ...] | None = None  # built at the first use, as in _object_decoder

    def encode(value: Any) -> Any:
        nonlocal specs
        if not isinstance(value, cls):
            raise MessageError("", f"expected {cls.__name__}, got {type(value).__name__} {shown(value)}")
        fields = specs
        if fields is None:
            fields = specs = tuple((spec.name, _encoder(spec.type)) for spec in _field_specs(cls))
        document = {}
        for name, encode_field in fields:
            try:
                document[name] = encode_field(getattr(value, name))
            except MessageError as exc:
                raise exc.under(name) from None
        return document

    return encode


def _finite_float(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number that fits one (an integer of 400 digits does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _check_text(value: str, path: str) -> None:
    # A lone surrogate (from a "\ud800" escape or a surrogateescape'd file name) is not Unicode text and
    # would fail later, far from here, in a database driver or a WARC writer.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MessageError(path, f"not valid Unicode text (lone surrogate): {shown(value)}") from None


def _described(tp: Any) -> str:
    inner = _optional_inner(tp)
    if inner is not None:
        return f"{_described(inner)} or null"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return "one of " + ", ".join(tp.__members__)
    names = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(get_origin(tp) or tp, "an object")
