"""`huiyi config ...`: the settings in effect and where each came from, the file's path, and a
commented config.toml to start from.

Thin on purpose: `huiyi.config.load` reads and checks everything (defaults, then
`HUIYI_HOME/config.toml`, then the environment) and notes each value's origin; this module only
prints. An API key is never printed, only whether it is set and by what; every other value
passes the same redaction as the rest of the CLI (a password inside a URL stays masked).
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from huiyi.cli.common import edge, emit_json, pass_huiyi, safe
from huiyi.config import FILE_KEYS, Loaded, Origin, Trigger, load
from huiyi.errors import UsageError

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["config", "template"]


@click.group("config")
def config() -> None:
    """Show the settings in effect, or write a config.toml to start from."""


def _secret(name: str) -> bool:
    return name in FILE_KEYS and FILE_KEYS[name].secret


def _names(loaded: Loaded) -> list[str]:
    """The file's keys in their documented order, then what only the environment sets."""
    return [*FILE_KEYS, *(name for name in loaded.origins if name not in FILE_KEYS)]


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if value is None:
        return "(not set)"
    if isinstance(value, tuple):
        if not value:
            return "(none)"
        return ", ".join(
            json.dumps(v.word, ensure_ascii=False) + (" (any case)" if v.any_case else "")
            if isinstance(v, Trigger)
            else str(v)
            for v in value
        )
    return str(value)


def _json(value: object) -> Any:
    if isinstance(value, tuple):
        return [
            {"word": safe(v.word), "anyCase": v.any_case} if isinstance(v, Trigger) else _json(v)
            for v in value
        ]
    if isinstance(value, Path | str):
        return safe(str(value))
    return value


def _from(origin: Origin) -> str:
    if origin.kind == "file":
        return "config.toml" + (f" line {origin.line}" if origin.line else "")
    return origin.name if origin.kind == "env" else origin.kind


def _origin_json(origin: Origin) -> dict[str, Any]:
    data: dict[str, Any] = {"from": origin.kind}
    if origin.kind == "env":
        data["variable"] = origin.name
    elif origin.kind == "file":
        data["key"] = origin.name
        data["line"] = origin.line
    return data


@config.command()
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@edge
def show(as_json: bool) -> None:
    """Every setting in effect and where it came from (default, config.toml or a variable)."""
    loaded = load()
    if as_json:
        settings: dict[str, Any] = {}
        for name in _names(loaded):
            value = loaded.values[name]
            shown = {"set": value} if _secret(name) else {"value": _json(value)}
            settings[name] = {**shown, **_origin_json(loaded.origins[name])}
        emit_json({"file": str(loaded.file), "found": loaded.file_found, "settings": settings})
        return
    state = "found" if loaded.file_found else "not found; `huiyi config init` writes one"
    click.echo(f"config file  {loaded.file} ({state})\n")
    rows = []
    for name in _names(loaded):
        value = loaded.values[name]
        text = ("set" if value else "not set") if _secret(name) else safe(_text(value))
        rows.append((name, text, _from(loaded.origins[name])))
    width = max((len(value) for _, value, _ in rows if len(value) <= 40), default=5)
    click.echo(f"{'setting':<22} {'value':<{width}}  from")
    for name, value, origin in rows:
        click.echo(f"{name:<22} {value:<{width}}  {origin}")


@config.command()
@pass_huiyi
def path(hy: Huiyi) -> None:
    """Print where config.toml is (in HUIYI_HOME), whether or not it exists yet."""
    click.echo(str(hy.settings.config_path))


@config.command()
@pass_huiyi
@edge
def init(hy: Huiyi) -> None:
    """Write a config.toml with every key commented out at its default (owner-only)."""
    target = hy.settings.config_path
    hy.settings.ensure_home()
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UsageError(
            f"{target} already exists; edit it, or move it aside to write a fresh one"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(template(load({}, read_file=False).values))
    click.echo(f"wrote {target}; uncomment a line to change that setting")


def _toml(value: object) -> str:
    """A default as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        items = [
            (f"{{ word = {_toml(t.word)}, anyCase = true }}" if t.any_case else _toml(t.word))
            for t in value
            if isinstance(t, Trigger)
        ]
        return f"[{', '.join(items)}]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    return str(value)


def template(defaults: Mapping[str, object]) -> str:
    """config.toml with every key commented out at its default, each under one line of help
    naming the variable that overrides it; table headers stay, so uncommenting a key under
    one just works."""
    lines = [
        "# huiyi settings. Every key is optional: remove the '# ' before one to change it.",
        "# An environment variable (named in [brackets]) overrides the file, and",
        "# `huiyi config show` prints what is in effect. HUIYI_HOME cannot be set here:",
        "# this file lives in it. An API key here needs `chmod 600` on this file.",
    ]
    table = ""
    for key, spec in FILE_KEYS.items():
        here, _, name = key.rpartition(".")
        if here != table:
            table = here
            lines += ["", f"[{table}]"]
        value = '""' if spec.secret else _toml(defaults[key])
        help_lines = textwrap.wrap(f"{spec.help} [{spec.env}]", 90)
        lines += ["", *(f"# {line}" for line in help_lines), f"# {name} = {value}"]
    return "\n".join(lines) + "\n"
