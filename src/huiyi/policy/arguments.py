"""The arguments of an MCP tool call, checked against the schema huiyi publishes.

Every server takes the raw arguments a client sent and checks them here against the tool's
schema in the manifest (`manifest.json`: types, required arguments, enums; defaults filled in),
leniently as models send them (`"5"` and `5.0` for an integer, `"true"` for a boolean). The
limits in the schema (`minimum`, `maxLength`, ...) are enforced by the core, which says what to
pass. A rejected argument is named, never echoed: a model may have put a secret in it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from huiyi.policy.manifest import tool_schemas

__all__ = ["NUMBER_BOUND", "InvalidArguments", "check_arguments"]


class InvalidArguments(Exception):
    """Arguments the published schema rejects; the message names them, never their values."""


class _Bad(Exception):
    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem


_INTEGER = re.compile(r"[+-]?\d{1,20}")
#: every whole number an argument may be (a seq, a limit): well inside SQLite's 64-bit integers
NUMBER_BOUND = 2**53
_TRUE = frozenset({"true", "t", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0"})


def _enum_text(values: Sequence[object]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _one(value: object, schema: Mapping[str, Any], where: str) -> object:
    """`value` as one non-null schema alternative accepts it (leniently, as models send it:
    `"5"` and `5.0` for an integer, `"true"` for a boolean), else `_Bad`."""
    kind = schema.get("type")
    if kind == "integer":
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and _INTEGER.fullmatch(value.strip())
        ):
            number = int(value)
        if number is None:
            raise _Bad(where, "Input should be a valid integer")
        if not -NUMBER_BOUND <= number <= NUMBER_BOUND:
            raise _Bad(where, "Input should be a whole number between -2^53 and 2^53")
        return number
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | str) and str(value).strip().lower() in _TRUE | _FALSE:
            return str(value).strip().lower() in _TRUE
        raise _Bad(where, "Input should be a valid boolean")
    if kind == "string":
        if not isinstance(value, str):
            raise _Bad(where, "Input should be a valid string")
        if "enum" in schema and value not in schema["enum"]:
            raise _Bad(where, f"Input should be {_enum_text(schema['enum'])}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise _Bad(where, "Input should be a valid list")
        items = schema.get("items", {})
        return [_value(item, items, f"{where}.{i}") for i, item in enumerate(value)]
    if kind == "object":
        if not isinstance(value, dict):
            raise _Bad(where, "Input should be a valid dictionary")
        return value
    return value  # a schema without a type takes anything


def _value(value: object, schema: Mapping[str, Any], where: str) -> object:
    alternatives: Sequence[Mapping[str, Any]] = schema.get("anyOf") or [schema]
    if value is None and any(alt.get("type") == "null" for alt in alternatives):
        return None
    first: _Bad | None = None
    for alt in alternatives:
        if alt.get("type") == "null":
            continue
        try:
            return _one(value, alt, where)
        except _Bad as exc:
            first = first or exc
    raise first or _Bad(where, "Input should be null")


def check_arguments(tool: str, arguments: object) -> dict[str, Any]:
    """`arguments` checked against `tool`'s published schema, defaults filled in; unknown
    names are ignored. Raises `InvalidArguments` naming every problem."""
    schema = tool_schemas()[tool]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(
            f"invalid arguments for {tool}: arguments: Input should be a valid dictionary"
        )
    required = set(schema.get("required", ()))
    checked: dict[str, Any] = {}
    problems: list[str] = []
    for name, prop in schema.get("properties", {}).items():
        if name not in arguments:
            if name in required:
                problems.append(f"{name}: Field required")
            checked[name] = prop.get("default")
            continue
        try:
            checked[name] = _value(arguments[name], prop, name)
        except _Bad as exc:
            problems.append(f"{exc.where}: {exc.problem}")
    if problems:
        raise InvalidArguments(f"invalid arguments for {tool}: {'; '.join(problems)}")
    return checked
