"""The pages themselves: a short README, the depth in docs/, links that lead somewhere, benchmark
commands that run, format notes that cover what the real clients write, and docs that state
facts of today rather than a record of who did what when.

`test_docs.py` checks what the pages say against the code; this module checks the pages
against each other, the benchmark scripts and the recorded client logs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.test_docs import DOCS, ROOT, code_segments
from tests.test_source_dsh import DOC_EXAMPLE

README_MAX_LINES = 400
BENCHMARKS = ROOT / "benchmarks"
FIXTURES = ROOT / "tests" / "clients" / "fixtures"
DSH_FIXTURES = ROOT / "tests" / "fixtures" / "dsh"


# -- the README and the pages that hold the depth ------------------------------------------------


def test_the_readme_is_short_enough_to_read_in_five_minutes() -> None:
    lines = DOCS["README.md"].splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def sections(doc: str) -> list[str]:
    """The `## ` and `### ` headings of a page, as written."""
    return re.findall(r"^#{2,3} (.+)$", DOCS[doc], re.M)


def test_benchmarks_page_has_a_section_with_a_table_for_every_measure() -> None:
    text = DOCS["docs/benchmarks.md"]
    wanted = [
        "MCP start-up and the first call",
        "CLI start-up and a search as a process",
        "Hooks",
        "First index",
        "Re-index of an unchanged history",
        "Search latency by size",
        "Index size and memory",
        "Embedding throughput",
        "Redaction throughput",
        "The web page",
    ]
    assert [s for s in sections("docs/benchmarks.md") if s in wanted] == wanted
    for heading in wanted:
        body = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        assert re.search(r"^\|.*\|\s*$", body, re.M), f"benchmarks.md: {heading} has no table"
        assert "python benchmarks/" in body, f"benchmarks.md: {heading} has no command"


def test_the_readme_has_one_results_table_and_one_speed_table_linking_the_depth() -> None:
    readme = DOCS["README.md"]
    for heading in ("Results", "Speed"):
        body = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
        tables = re.findall(r"(?:^\|.*\|\n)+", body, re.M)
        assert len(tables) == 1, f"README {heading}: {len(tables)} tables"
        assert tables[0].count("\n") >= 5, f"README {heading}: the table is too short"
    for page in ("docs/benchmarks.md", "docs/eval.md", "docs/comparison.md"):
        assert f"]({page})" in readme, f"the README does not link {page}"


def claude_recall_needle_kinds() -> list[str]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from claude_history import needles
    finally:
        sys.path.remove(str(BENCHMARKS))
    import random

    return list(dict.fromkeys(n.kind for n in needles(random.Random(0))))


def test_the_comparison_has_a_found_at_5_row_for_every_needle_kind_the_benchmark_plants() -> None:
    text = DOCS["docs/comparison.md"]
    table = text.split("## found@5 per needle kind", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().lower() for line in table.splitlines() if "|" in line}
    for kind in claude_recall_needle_kinds():
        label = kind.replace("_", " ")
        assert any(row.startswith(label) for row in rows), f"comparison.md: no row for {kind}"
    for size in ("4,250 messages", "106,155 messages"):
        assert any(s.startswith(size) for s in sections("docs/comparison.md")), size


def test_the_changelog_groups_what_changed_and_what_was_tried() -> None:
    text = DOCS["CHANGELOG.md"]
    assert re.search(r"^## \[Unreleased\]", text, re.M), "CHANGELOG.md: no Unreleased section"
    for group in ("Added", "Changed", "Fixed", "Tried and not kept"):
        assert f"\n### {group}\n" in text, f"CHANGELOG.md has no {group}"
        body = text.split(f"\n### {group}\n", 1)[1].split("\n### ", 1)[0]
        items = re.findall(r"^- ", body, re.M)
        assert len(items) >= 5, f"CHANGELOG.md {group}: {len(items)} items"
    tried = text.split("\n### Tried and not kept\n", 1)[1]
    for experiment in ("Tokeniser rewrites", "larger page cache", "Tie-breaks"):
        assert experiment.lower() in tried.lower(), f"CHANGELOG.md: {experiment} not recorded"


# -- the format notes cover what the real clients wrote ------------------------------------------


def _types_named(doc: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", DOCS[doc]))


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _missing(doc: str, written: set[str]) -> list[str]:
    named = _types_named(doc)
    return sorted(t for t in written if t not in named)


def test_the_claude_code_notes_name_every_record_the_real_client_wrote() -> None:
    records = _jsonl(FIXTURES / "claude-code-2.1.332-transcript.jsonl")
    written = {str(r["type"]) for r in records}
    attachments = {str(a["type"]) for r in records if isinstance(a := r.get("attachment"), dict)}
    assert {"user", "assistant", "attachment"} <= written
    missing = _missing("docs/formats/claude-code.md", written | attachments)
    assert not missing, f"docs/formats/claude-code.md does not name {missing}"


def test_the_codex_notes_name_every_line_and_item_the_real_client_wrote() -> None:
    lines = _jsonl(FIXTURES / "codex-0.171.0-rollout.jsonl")
    written = {str(line["type"]) for line in lines}
    payloads = {
        str(p["type"])
        for line in lines
        if isinstance(p := line.get("payload"), dict) and "type" in p
    }
    items = {
        str(i["type"])
        for line in lines
        if isinstance(p := line.get("payload"), dict) and isinstance(i := p.get("item"), dict)
    }
    assert {"session_meta", "response_item", "event_msg"} <= written
    missing = _missing("docs/formats/codex.md", written | payloads | items)
    assert not missing, f"docs/formats/codex.md does not name {missing}"


def _dsh_lines(path: Path) -> list[dict[str, object]]:
    data, out = path.read_bytes(), b""
    while data:
        frame = zstandard.ZstdDecompressor().decompressobj()
        out += frame.decompress(data)
        data = frame.unused_data
    return [json.loads(line) for line in out.decode("utf-8").splitlines() if line]


def test_the_dsh_notes_name_every_event_a_real_dsh_wrote() -> None:
    logs = sorted(DSH_FIXTURES.rglob("session.jsonl.zstd"))
    assert len(logs) >= 2
    written = {str(line["type"]) for log in logs for line in _dsh_lines(log)}
    assert {"session", "user/message", "assistant/message", "compaction/summary"} <= written
    missing = _missing("docs/formats/dsh.md", written)
    assert not missing, f"docs/formats/dsh.md does not name {missing}"


def test_the_dsh_notes_show_the_log_the_reader_tests_fold() -> None:
    text = DOCS["docs/formats/dsh.md"]
    section = text.split("\n## A whole log\n", 1)[1].split("\n## ", 1)[0]
    frames = re.findall(r"```json\n(.*?)\n```", section, re.S)
    assert "\n\n".join(frames) == DOC_EXAMPLE.strip()


@pytest.mark.parametrize("harness", ["dsh", "claude-code", "codex"])
def test_each_format_note_says_where_the_logs_are_and_how_hooks_talk(harness: str) -> None:
    doc = f"docs/formats/{harness}.md"
    assert doc in DOCS, f"{doc} is missing"
    text = DOCS[doc]
    assert len(text.splitlines()) >= 60, f"{doc} is too short to be the format's notes"
    for must in ("hookSpecificOutput", "transcript_path", "session_id", "compaction"):
        assert must in text, f"{doc} does not say {must}"


# -- links ---------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.M | re.S)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = _INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", text), re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(text: str) -> list[str]:
    prose = _INLINE_CODE.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose)


def test_every_relative_link_leads_to_a_page_and_heading_that_exist() -> None:
    problems = []
    checked = 0
    for doc, text in DOCS.items():
        here = (ROOT / doc).parent
        for target in links(text):
            if re.match(r"[a-z][a-z+.-]*:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            page = (here / path).resolve() if path else ROOT / doc
            checked += 1
            if not page.exists():
                problems.append(f"{doc}: {target} (no such file)")
            elif (
                anchor
                and page.suffix == ".md"
                and anchor not in anchors(page.read_text(encoding="utf-8"))
            ):
                problems.append(f"{doc}: {target} (no such heading)")
    assert checked > 50
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Over HTTP: a token bound to workspaces", "over-http-a-token-bound-to-workspaces"),
        ("`huiyi config show`", "huiyi-config-show"),
        ("Ranking: re-rank of the fused candidates", "ranking-re-rank-of-the-fused-candidates"),
    ],
)
def test_anchors_are_made_as_github_makes_them(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


# -- benchmark commands --------------------------------------------------------------------------

_BENCH_COMMAND = re.compile(r"\bpython benchmarks/([\w.-]+)((?:[ \t]+[^\s`|;&]+)*)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def benchmark_commands() -> list[tuple[str, str, str]]:
    """(doc, script, options written after it) for every `python benchmarks/X.py ...` shown."""
    found = []
    for doc, text in DOCS.items():
        for segment in code_segments(text):
            for match in _BENCH_COMMAND.finditer(segment):
                found.append((doc, match.group(1), match.group(2)))
    return found


def accepted_options(scripts: set[str]) -> dict[str, set[str]]:
    """Each script's options, from its own `--help` (the scripts run at once, in parallel)."""
    running = {
        script: subprocess.Popen(
            [sys.executable, str(BENCHMARKS / script), "--help"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in sorted(scripts)
    }
    accepted = {}
    for script, process in running.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, f"{script} --help failed:\n{err}"
        accepted[script] = set(_OPTION.findall(out))
    return accepted


def test_every_benchmark_command_names_a_script_and_options_it_accepts() -> None:
    commands = benchmark_commands()
    shown = {script for doc, script, _ in commands if doc == "docs/benchmarks.md"}
    assert len(shown) >= 8, shown  # the parser finds the page's commands at all
    missing = sorted({f"{doc}: {s}" for doc, s, _ in commands if not (BENCHMARKS / s).is_file()})
    assert not missing, f"no such script in benchmarks/: {missing}"
    accepted = accepted_options({script for _, script, _ in commands})
    problems = sorted(
        {
            f"{doc}: {script} has no option {option}"
            for doc, script, rest in commands
            for option in _OPTION.findall(rest)
            if option not in accepted[script]
        }
    )
    assert not problems, "\n".join(problems)


def test_a_benchmark_option_the_script_does_not_have_is_caught() -> None:
    accepted = accepted_options({"bench_redact.py"})["bench_redact.py"]
    assert {"--lines", "--rounds", "--json"} <= accepted
    assert "--sizes" not in accepted


# -- facts of today, not a record of who did what when -------------------------------------------

#: Phrases that belong in a commit message or a changelog's history, not in a page a user reads.
DIARY = [
    (r"(?<![\w&/])#\d+\b", "an issue number"),
    (r"\bissues? \d+", "an issue number"),
    (r"\bteammates?\b", "who ran what"),
    (r"\banother engineer\b", "who ran what"),
    (r"\bthe last round\b|\bthis round\b|\bnext round\b|\bprevious round\b", "a round of work"),
    (r"\bthis stop\b", "a round of work"),
    (r"\b(?:first|second|third|fourth|fifth|sixth) step\b", "a step of past work"),
    (r"\bI (?:measured|tried|ran|found)\b|\bwe tried\b|\bof mine\b", "who ran what"),
    (r"\b(?:main|checkout of|code before this change) (?:at )?[0-9a-f]{7,12}\b", "a commit"),
]


@pytest.mark.parametrize(("pattern", "what"), DIARY, ids=[p for p, _ in DIARY])
def test_no_page_records_who_did_what_when(pattern: str, what: str) -> None:
    found = [
        f"{doc}: {match.group(0)!r}"
        for doc, text in DOCS.items()
        for match in re.finditer(pattern, text, re.I)
    ]
    assert not found, f"{what}:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "the target of issue 14, part 4",
        "see #12 for why",
        "measured while teammates ran their suites",
        "Index size, fifth step",
        "against main at a262d73",
        "This round, on the quiet machine",
    ],
)
def test_diary_phrasing_is_caught(text: str) -> None:
    assert any(re.search(pattern, text, re.I) for pattern, _ in DIARY)


# -- the architecture page -------------------------------------------------------------------

SRC = ROOT / "src" / "huiyi"
#: a module path the architecture page names, with an optional `:name` defined in it
_MODULE_REF = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py)(?::([A-Za-z_]+))?`")


def test_the_architecture_page_names_only_modules_and_names_that_exist() -> None:
    text = DOCS["docs/architecture.md"]
    refs = _MODULE_REF.findall(text)
    assert len(refs) > 15  # the page names the modules at all
    missing = []
    for path, name in refs:
        where = ROOT / path if path.startswith("tests/") else SRC / path
        if "/" not in path and not where.is_file():
            where = SRC / "harnesses" / "dsh" / path  # the harness table names a package's files
        if not where.is_file():
            missing.append(path)
        elif name and not re.search(rf"^(?:class|def) {name}\b|^{name}\b", where.read_text(), re.M):
            missing.append(f"{path}:{name}")
    assert missing == []


def test_the_architecture_page_places_every_package_of_the_source() -> None:
    text = DOCS["docs/architecture.md"]
    tops = sorted(
        p.name if p.is_dir() else p.stem
        for p in SRC.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.stem != "__init__")
    )
    unplaced = [top for top in tops if f"`{top}" not in text]
    assert unplaced == []
