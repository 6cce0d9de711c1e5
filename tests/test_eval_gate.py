"""`huiyi eval gate PATH`: a gate set's history goes through the real index, every message
through the real gate, and coverage and false positives come out per split, language and
category; the bundled set meets the targets and the docs quote what the command prints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from huiyi.cli.root import main
from huiyi.eval.gate import evaluate_gate, load_gate
from huiyi.recall import auto, gate

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "src" / "huiyi" / "eval" / "data" / "gate.json"
WS = "/eval/gate-test/app"


def huiyi(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def small_set() -> dict[str, Any]:
    events = [
        {
            "seq": 1,
            "role": "user",
            "time": 1748736060000,
            "text": "the nginx 502 came from keepalive_timeout 5s",
        },
        {
            "seq": 2,
            "role": "assistant",
            "time": 1748736120000,
            "text": "Raised keepalive_timeout to 75s on the upstream.",
        },
    ]
    other = [
        {"seq": 1, "role": "user", "time": 1748736060000, "text": "grafana dashboard for kafka lag"}
    ]

    def case(cid: str, text: str, expect: str, category: str, lang: str = "en") -> dict[str, str]:
        return {"id": cid, "text": text, "expect": expect, "category": category, "lang": lang}

    return {
        "name": "small-gate",
        "workspace": WS,
        "sessions": [
            {
                "id": "s1",
                "cwd": WS,
                "title": "nginx 502",
                "created": 1748736000000,
                "events": events,
            },
            {
                "id": "s2",
                "cwd": "/eval/gate-test/other",
                "title": "grafana",
                "created": 1748736000000,
                "events": other,
            },
        ],
        "cases": [
            case("t1", "DJYHFS nginx", "trigger", "trigger"),
            case("p1", "继续", "process", "process", "zh"),
            case(
                "b1", "remember the keepalive_timeout fix for the nginx 502?", "backref", "backref"
            ),
            case("b2", "remember the grafana dashboard for kafka lag?", "none", "backref-scope"),
            # labelled to fire, but nothing like it is in history: a miss the report must show
            case("b3", "remember the terraform state lock?", "backref", "backref"),
            case("o1", "What does the continue statement do?", "none", "lookalike"),
            case("o2", "Remember to add tests.", "none", "lookalike"),
        ],
    }


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_table_reports_coverage_and_false_positives_with_every_miss(tmp_path: Path) -> None:
    result = huiyi("eval", "gate", str(write(tmp_path, small_set())))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("gate: small-gate (7 messages; history: 2 sessions, 3 events)")
    assert re.search(r"^all\s+7\s+3/4\s+75\.0%\s+0/3\s+0\.0%$", out, re.M), out
    assert re.search(r"^category backref\s+2\s+1/2\s+50\.0%\s+-$", out, re.M), out
    assert re.search(r"^lang zh\s+1\s+1/1\s*100\.0%\s+-$", out, re.M), out
    assert "misses (1):" in out and "- b3 [backref -> none]" in out
    assert "asking the gate about 7 messages" in result.stderr  # progress on stderr only


def test_json_holds_totals_groups_and_every_decision(tmp_path: Path) -> None:
    result = huiyi("eval", "gate", str(write(tmp_path, small_set())), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["all"]["coverage"] == 0.75 and report["all"]["false_positive_rate"] == 0.0
    assert report["category"]["backref-scope"]["fired_wrongly"] == 0
    got = {c["id"]: c["got"] for c in report["cases"]}
    assert got == {
        "t1": "trigger",
        "p1": "process",
        "b1": "backref",
        "b2": "none",
        "b3": "none",
        "o1": "none",
        "o2": "none",
    }
    why = {c["id"]: c["why"] for c in report["cases"]}
    assert "found in session s1" in why["b1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["cases"][0].update(expect="maybe"), "expect must be one of"),
        (lambda d: d["cases"][1].update(id="t1"), "duplicate case id 't1'"),
        (lambda d: d["cases"][0].update(workspace="/nowhere"), "is no session's cwd"),
        (lambda d: d.update(cases=[]), "has no cases"),
        (lambda d: d["cases"][0].pop("text"), "field 'text' is missing"),
    ],
)
def test_a_malformed_set_is_a_usage_error_naming_the_part(
    tmp_path: Path, change: Any, message: str
) -> None:
    data = small_set()
    change(data)
    result = huiyi("eval", "gate", str(write(tmp_path, data)))
    assert result.exit_code == 2
    assert message in result.stderr


def test_search_only_options_are_refused_for_the_gate(tmp_path: Path) -> None:
    result = huiyi("eval", "gate", str(write(tmp_path, small_set())), "--layer", "lexical")
    assert result.exit_code == 2
    assert "--layer scores search sets, not the gate" in result.stderr


@pytest.fixture(scope="module")
def bundled() -> dict[str, Any]:
    return evaluate_gate(load_gate(BUNDLED)).as_json()


def test_bundled_set_is_large_mixed_and_meets_the_targets(bundled: dict[str, Any]) -> None:
    assert bundled["all"]["messages"] >= 300
    assert set(bundled["lang"]) == {"en", "mixed", "zh"}
    assert {
        "trigger",
        "process",
        "backref",
        "backref-absent",
        "backref-scope",
        "ordinary",
        "lookalike",
    } <= set(bundled["category"])
    assert set(bundled["split"]) == {"dev", "held-out"}
    assert bundled["all"]["coverage"] >= 0.90
    assert bundled["all"]["false_positive_rate"] <= 0.05
    assert bundled["split"]["held-out"]["coverage"] >= 0.90


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def test_the_docs_quote_the_numbers_the_command_prints(bundled: dict[str, Any]) -> None:
    docs = (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for split in ("all", "dev", "held-out"):
        numbers = bundled["all"] if split == "all" else bundled["split"][split]
        row = (
            f"| {split} | {numbers['messages']} | {numbers['fired_right']}/{numbers['should_fire']}"
            f" {_percent(numbers['coverage'])} | {numbers['fired_wrongly']}/"
            f"{numbers['should_not_fire']} {_percent(numbers['false_positive_rate'])} |"
        )
        assert row in docs, f"docs/gate.md should have the row: {row}"
    overall = bundled["all"]
    summary = (
        f"coverage {_percent(overall['coverage'])}, false positives "
        f"{_percent(overall['false_positive_rate'])}"
    )
    # prose may break a line anywhere
    assert summary in " ".join(readme.split()) and summary in " ".join(docs.split())


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        (r"the last (\d+) messages of\s+the workspace's most recently active", auto.TOPIC_MESSAGES),
        (r"read with (\d+) events on each side", auto.WINDOW),
        (r"at least (\d+) of its units\s+\(`MIN_FOUND`\)", gate.MIN_FOUND),
        (r"at least (half) of it \(`MIN_COVERAGE`\)", gate.MIN_COVERAGE),
    ],
)
def test_docs_state_the_gates_constants(pattern: str, value: float) -> None:
    docs = (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")
    found = re.search(pattern, docs)
    assert found, f"docs/gate.md no longer says /{pattern}/"
    stated = 0.5 if found.group(1) == "half" else float(found.group(1))
    assert stated == value
