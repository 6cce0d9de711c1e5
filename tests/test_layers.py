"""The module graph runs one way: the command line → transports → agent policy and the
installer → the one doorway (`api.Huiyi`) → recall/memory → search → store → the harnesses'
readers → sources, with leaves below. An import that runs back up, sideways between two
packages of one layer, or from above the doorway past it into the core's insides, is a
structural bug this test names."""

from __future__ import annotations

import ast
from pathlib import Path

import huiyi

SRC = Path(huiyi.__file__).parent

#: Highest first; a module may import its own package and anything in a lower layer.
LAYERS: list[frozenset[str]] = [
    frozenset({"__main__"}),
    frozenset({"cli"}),
    frozenset({"web", "transports"}),
    frozenset({"harnesses.install"}),
    frozenset({"install", "policy", "eval"}),
    frozenset({"api", "doctor", "hub"}),
    frozenset({"recall", "memory"}),
    frozenset({"search"}),
    frozenset({"store"}),
    frozenset({"demo"}),
    frozenset({"harnesses.reader"}),
    frozenset({"sources"}),
    # leaves: plain data, settings, text, the safety exit; they import only each other
    frozenset(
        {
            "config",
            "config_file",
            "errors",
            "files",
            "harnesses",
            "lock",
            "loopback",
            "model",
            "openai_http",
            "safety",
            "teamclient",
            "teamname",
            "text",
            "toolspec",
            "workspace",
        }
    ),
]
#: the doorway: everything above it reaches the core through `Huiyi`
DOORWAY = LAYERS.index(frozenset({"api", "doctor", "hub"}))

#: What a module above the doorway may import from at or below it: the doorway itself (and the
#: public types it hands out), the public API, the faces of memory and the safety exit, and
#: the leaves that are plain data, settings and text. Nothing of store, sources, search,
#: recall or the safety rules' insides.
PUBLIC = frozenset(
    {
        "huiyi",
        "huiyi.api",
        "huiyi.config",
        "huiyi.config_file",
        "huiyi.errors",
        "huiyi.files",
        "huiyi.harnesses",
        "huiyi.harnesses.base",
        "huiyi.harnesses.hookform",
        "huiyi.harnesses.pending",
        "huiyi.hub",
        "huiyi.lock",
        "huiyi.loopback",
        "huiyi.memory",
        "huiyi.model",
        "huiyi.openai_http",
        "huiyi.safety.exit",
        "huiyi.teamclient",
        "huiyi.teamname",
        "huiyi.toolspec",
        "huiyi.workspace",
    }
)
PUBLIC_PACKAGES = ("huiyi.text.",)
#: Packages above the doorway that may reach past it, and why.
PAST_THE_DOORWAY = {
    # an evaluation measures the layers themselves: each search layer, the floors, the gate
    "eval": "measures the core's layers one by one",
}


#: A harness package (`huiyi.harnesses.<name>`) spans layers: each of its modules stands in the
#: layer of the job it does, named by its file (the log reader with the sources, the installer
#: rows with the installer); its `__init__` (the adapter record) is a leaf.
FACETS = {
    "reader": "harnesses.reader",
    "frames": "harnesses.reader",
    "fold": "harnesses.reader",
    "caller": "harnesses.reader",
    "agents": "harnesses.reader",
    "install": "harnesses.install",
    "digest": "harnesses.install",
}


def _key(module: str) -> str:
    """The name `LAYERS` knows `module` (dotted, `huiyi.` first) by."""
    parts = module.split(".")[1:]
    if parts[0] == "harnesses" and len(parts) >= 3:
        return FACETS[parts[2]]
    return parts[0]


def _unit(module: str) -> str:
    """Modules of one unit may import each other within a layer: a top-level package, or
    one harness's package."""
    parts = module.split(".")[1:]
    return ".".join(parts[:2]) if parts[0] == "harnesses" else parts[0]


def _layer(module: str) -> int:
    key = _key(module)
    for number, names in enumerate(LAYERS):
        if key in names:
            return number
    raise AssertionError(f"{module} has no layer: add {key!r} to LAYERS in {__file__}")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("huiyi.")}


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("huiyi", *parts))


def _top(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def test_no_import_runs_back_up_the_layers() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "__init__.py":
            continue  # the public API re-exports from every layer
        me = _module(path)
        mine = _layer(me)
        for module in _imports(path):
            theirs = _layer(module)
            leaves = mine == theirs == len(LAYERS) - 1
            if theirs < mine or (theirs == mine and _unit(module) != _unit(me) and not leaves):
                wrong.append(f"{path.relative_to(SRC)} imports {module}")
    assert wrong == []


def test_above_the_doorway_only_its_public_types_are_imported() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        me = _module(path)
        if path == SRC / "__init__.py" or _layer(me) >= DOORWAY or _top(path) in PAST_THE_DOORWAY:
            continue
        for module in sorted(_imports(path)):
            if _layer(module) < DOORWAY or module in PUBLIC or module.startswith(PUBLIC_PACKAGES):
                continue
            if _unit(module) == _unit(me):
                continue  # a harness's installer rows read its own files
            wrong.append(f"{path.relative_to(SRC)} imports {module}")
    assert wrong == []


def test_the_layer_rules_catch_what_they_forbid() -> None:
    """The rules above name real modules: a test that checks nothing would pass anyway."""
    assert _layer("huiyi.harnesses.dsh.reader") > _layer("huiyi.store.db")
    assert _layer("huiyi.harnesses.dsh.install") < _layer("huiyi.install.common")
    assert _layer("huiyi.transports.route") < DOORWAY
    assert "huiyi.store.queries" not in PUBLIC and "huiyi.recall.anchor" not in PUBLIC


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
