"""`HUIYI_HOME/config.toml` as text: parsed, flattened to dotted keys, and every problem told
with the file, the line and the key.

`huiyi.config` decides what each key means and checks its value; this module only reads the
file and answers "which line sets this key?" (tomllib keeps no positions, so `line` reads the
text: table headers and `key =` lines). It knows nothing of the keys but what it is given,
which keeps it a leaf below `huiyi.config`.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from huiyi.errors import SettingsError

__all__ = ["ConfigFile", "shown", "unknown_key"]

_TOML_AT = re.compile(r"^(.*) \(at (?:line (\d+), column (\d+)|end of document)\)$", re.S)
_BARE = r"(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
_HEADER = re.compile(rf"^\s*\[\s*({_BARE}(?:\s*\.\s*{_BARE})*)\s*\]")
_ASSIGN = re.compile(rf"^\s*({_BARE}(?:\s*\.\s*{_BARE})*)\s*=")
_PART = re.compile(_BARE)


def shown(raw: object) -> str:
    """A bad value as it goes into a message: quoted and short, or what kind of TOML value."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, int | float):
        return repr(raw)
    if isinstance(raw, str):
        return repr(raw if len(raw) <= 60 else raw[:60] + "...")
    if isinstance(raw, list):
        return "an array"
    return "a table" if isinstance(raw, dict) else f"a {type(raw).__name__}"


def _dotted(written: str) -> str:
    """`memory . "userLimit"` as the dotted key `memory.userLimit`."""
    return ".".join(part.strip("\"'") for part in _PART.findall(written))


class ConfigFile:
    """One config.toml, read whole. `values` maps dotted keys (`memory.userLimit`) to their
    TOML values; a key of a table in `tables` is flattened, any other key is kept as it is."""

    def __init__(self, path: Path, text: str, data: dict[str, Any], tables: Collection[str]):
        self.path = path
        self.lines = text.split("\n")  # TOML ends lines at \n only (not at U+0085, U+2028)
        self._lines = self._index()
        self.values: dict[str, object] = {}
        for name, value in data.items():
            if name not in tables:
                self.values[name] = value
            elif isinstance(value, dict):
                self.values.update((f"{name}.{sub}", item) for sub, item in value.items())
            else:
                raise SettingsError(f"{self.label(name)} must be a table [{name}] (got a value)")

    @classmethod
    def read(cls, path: Path, tables: Collection[str]) -> ConfigFile | None:
        """The file at `path`, None when there is none; a file that cannot be used raises."""
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            # (a home that is a file, or under one, holds no file: `Settings.ensure_home`
            # says what is wrong with it where it is needed)
            return None
        except OSError as exc:
            raise SettingsError(
                f"{path} cannot be read ({exc.strerror or exc}); fix it or move it aside"
            ) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise SettingsError(f"{path} line {line}: not UTF-8 text; save it as UTF-8") from None
        import tomllib  # only when there is a file: a hook without one skips the import

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path} {_toml_problem(str(exc), text)}") from None
        return cls(path, text, data, tables)

    def line(self, key: str) -> int | None:
        """The line that sets `key` (or an inline table holding it, or opens the table `key`),
        None when it cannot be told."""
        parts = key.split(".")
        for n in range(len(parts), 0, -1):
            if (line := self._lines.get(".".join(parts[:n]))) is not None:
                return line
        return self._lines.get(f"[{key}]")

    def _index(self) -> dict[str, int]:
        """The first line of each assigned dotted key, and of each table header (`[name]`)."""
        found: dict[str, int] = {}
        table = ""
        inside = _in_multiline_string(self.lines)
        for number, text in enumerate(self.lines, 1):
            if inside[number - 1]:  # inside a multi-line string nothing is a key
                continue
            if header := _HEADER.match(text):
                table = _dotted(header.group(1))
                found.setdefault(f"[{table}]", number)
            elif assign := _ASSIGN.match(text):
                name = _dotted(assign.group(1))
                found.setdefault(f"{table}.{name}" if table else name, number)
        return found

    def label(self, key: str) -> str:
        """How a message names `key`: `<path> line N: <key>`."""
        line = self.line(key)
        return f"{self.path} line {line}: {key}" if line else f"{self.path}: {key}"

    def check_private(self, secrets: Mapping[str, str]) -> None:
        """Refuse a key of `secrets` (key -> the variable that can hold it instead) in a file
        other users may read: `chmod 600` fixes it. An index of one's history is no place for
        a world-readable API key, even inside an owner-only directory."""
        found = [key for key in self.values if key in secrets]
        if not found or os.name == "nt":
            return
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            raise SettingsError(
                f"{self.label(found[0])} is an API key in a file other users may read "
                f"(mode {mode:o}); run `chmod 600 {shlex.quote(str(self.path))}`, or set "
                f"{secrets[found[0]]} instead"
            )


def _toml_problem(message: str, text: str) -> str:
    """tomllib's "Invalid value (at line 3, column 9)" as "line 3, column 9: not valid TOML
    (invalid value)"; "at end of document" becomes the last line."""
    found = _TOML_AT.match(message)
    if found is None:
        return f"is not valid TOML ({' '.join(message.split())})"
    what, line, column = found.groups()
    where = f"line {line}, column {column}" if line else f"line {text.count(chr(10)) + 1}"
    return f"{where}: not valid TOML ({' '.join(what.split()).lower()})"


def _snake(name: str) -> str:
    """`memory.userLimit` and `MEMORY_USER_LIMIT` alike as `memory_user_limit`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace(".", "_").lower()


def unknown_key(label: str, key: str, known: Mapping[str, str], env_only: Mapping[str, str]) -> str:
    """The message for a `key` the file may not hold, naming the closest one it may.

    `known` maps the file's keys to the variables that override them (someone may write a
    variable's name as a key); `env_only` maps the settings only the environment sets to
    their variables.
    """
    last = key.rsplit(".", 1)[-1].casefold()
    for name, variable in env_only.items():
        if last in (name.casefold(), variable.casefold()):
            why = " (the file lives in it)" if variable == "HUIYI_HOME" else ""
            return f"{label} cannot be set in config.toml{why}; set {variable} in the environment"
    folded = {name.casefold(): name for name in known}
    by_variable = {_snake(var.removeprefix("HUIYI_")): name for name, var in known.items()}
    guess = (
        folded.get(key.casefold())
        or by_variable.get(_snake(key.removeprefix("HUIYI_")))  # `memory.limit`, HUIYI_MEMORY_LIMIT
    )
    if guess is None:
        import difflib  # only for a message: a start-up without a mistake skips it

        close = difflib.get_close_matches(key.casefold(), list(folded), n=1, cutoff=0.6)
        guess = folded[close[0]] if close else None
    if guess is not None:
        return f"{label} is not a setting; did you mean {guess}?"
    table = key.split(".")[0]
    inside = sorted(n.split(".", 1)[1] for n in known if n.startswith(f"{table}."))
    if inside:
        return f"{label} is not a setting; [{table}] holds {', '.join(inside)}"
    top = {n if "." not in n else f"[{n.split('.')[0]}]" for n in known}
    return f"{label} is not a setting; the file holds {', '.join(sorted(top))}"


def _in_multiline_string(lines: list[str]) -> list[bool]:
    """For each line, whether it begins inside a multi-line string (three quotes of either
    kind). Scanned as TOML reads it, one-line strings and comments included, so three quotes
    inside a one-line string (`key = ["'''"]`) or a comment open nothing."""
    inside: list[bool] = []
    state = ""  # the open string's delimiter, or "" outside strings
    for line in lines:
        inside.append(len(state) == 3)
        i = 0
        while i < len(line):
            if not state:
                if line[i] == "#":
                    break
                if line.startswith(('"""', "'''"), i):
                    state, i = line[i] * 3, i + 3
                    continue
                if line[i] in "\"'":
                    state = line[i]
            elif state[0] == '"' and line[i] == "\\":
                i += 1  # an escaped character
            elif line.startswith(state, i):
                state, i = "", i + len(state)
                continue
            i += 1
        if len(state) == 1:
            state = ""  # a one-line string ends with its line (or the file is not TOML)
    return inside
