"""The module graph runs one way: entry points → api → recall/memory → search → store →
sources, with leaves below. An import that runs back up (or sideways between two packages of
one layer) is a structural bug this test names."""

from __future__ import annotations

import ast
from pathlib import Path

import huiyi

SRC = Path(huiyi.__file__).parent

#: Highest first; a module may import its own package and anything in a lower layer.
LAYERS: list[frozenset[str]] = [
    frozenset({"__main__"}),
    frozenset({"cli"}),
    frozenset(
        {
            "cli_config",
            "cli_eval",
            "cli_front",
            "cli_index",
            "cli_install",
            "cli_mcp",
            "cli_memory",
            "cli_read",
            "cli_web",
        }
    ),
    frozenset({"cli_common"}),
    frozenset({"cli_text"}),
    frozenset({"web"}),
    frozenset({"integrations"}),
    frozenset({"eval"}),
    frozenset({"api", "doctor"}),
    frozenset({"recall", "memory"}),
    frozenset({"search"}),
    frozenset({"store"}),
    frozenset({"demo"}),
    frozenset({"sources"}),
    # leaves: plain data, settings, text, the safety exit; they import only each other
    frozenset(
        {
            "config",
            "config_file",
            "errors",
            "lock",
            "model",
            "openai_http",
            "safety",
            "text",
            "workspace",
        }
    ),
]


def _layer(top: str) -> int:
    for number, names in enumerate(LAYERS):
        if top in names:
            return number
    raise AssertionError(f"huiyi.{top} has no layer: add it to LAYERS in {__file__}")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("huiyi.")}


def _top(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def test_no_import_runs_back_up_the_layers() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "__init__.py":
            continue  # the public API re-exports from every layer
        top = _top(path)
        mine = _layer(top)
        for module in _imports(path):
            other = module.split(".")[1]
            theirs = _layer(other)
            leaves = mine == theirs == len(LAYERS) - 1
            if theirs < mine or (theirs == mine and other != top and not leaves):
                wrong.append(f"{path.relative_to(SRC)} imports {module}")
    assert wrong == []


def test_safety_imports_nothing_but_leaves() -> None:
    leaves = LAYERS[-1]
    for path in (SRC / "safety").glob("*.py"):
        assert {m.split(".")[1] for m in _imports(path)} <= leaves, path.name


def test_only_the_store_speaks_sql() -> None:
    """SQL text (a SELECT/INSERT/UPDATE/DELETE/CREATE statement) appears only under store/."""
    statements = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE TABLE")
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        if _top(path) == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if any(s in text for s in statements) and (" FROM " in text or "INTO" in text):
                    wrong.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert wrong == []
