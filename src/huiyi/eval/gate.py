"""`huiyi eval gate PATH`: how often the automatic-recall gate fires when it should, and when not.

A gate set is one JSON object in the golden format (`docs/eval.md`: `sessions` of events, each
with a `cwd`) plus labelled `cases`:

    {"name": "huiyi-gate", "workspace": "/eval/gate/shop-api",
     "sessions": [...],
     "cases": [{"id": "p-zh-01", "text": "继续", "expect": "process", "category": "process",
                "lang": "zh", "split": "dev"}, ...]}

`expect` is `trigger`, `process`, `backref` or `none`. The sessions are the history: they are
written out as generic JSONL and indexed into a temporary HUIYI_HOME by the real ingestion path
(`eval.harness` does the same for search), and every case is asked through the real gate
(`recall.gate.decide` with `recall.auto.HistoryProbe`) as the first prompt of a new session in
the case's workspace (the set's `workspace` unless the case names another). So back-references
are checked against a real index, through the real scope: a fragment that only occurs in
another workspace or in a private session must not fire.

The report: **coverage**, the share of should-fire cases that fire with the expected kind, and
the **false-positive rate**, the share of should-not-fire cases that fire at all; overall, per
split (the `held-out` split was written after the gate was tuned on `dev`), per language and per
category, with every miss and its reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huiyi.config import DEFAULT_TRIGGERS, Settings, Trigger
from huiyi.errors import EvalError, UsageError
from huiyi.eval.datasets import golden_from_obj
from huiyi.eval.evalset import EvalSet
from huiyi.eval.harness import indexed
from huiyi.model import CallerContext
from huiyi.recall.auto import HistoryProbe
from huiyi.recall.gate import Decision, Fire, decide

__all__ = [
    "EXPECT",
    "CaseResult",
    "GateCase",
    "GateReport",
    "GateSet",
    "evaluate_gate",
    "load_gate",
]

#: what a case may expect; `none` means the gate must stay quiet
EXPECT = ("trigger", "process", "backref", "none")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class GateCase:
    id: str
    text: str
    expect: Fire | None
    category: str
    lang: str
    split: str
    workspace: str


@dataclass(slots=True)
class GateSet:
    name: str
    history: EvalSet
    cases: list[GateCase]
    triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS


def _text(raw: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: field {key!r} is missing or not a non-empty string")
    return value


def gate_from_obj(data: Any, *, source: str = "gate set") -> GateSet:
    """Validate a parsed gate set (see the module docstring); errors name the bad part."""
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise UsageError(f"{source}: expected a JSON object with 'sessions' and 'cases'")
    history = golden_from_obj({**data, "queries": []}, source=source)
    cwds = set(history.workspaces())
    default_ws = data.get("workspace")
    if default_ws is not None and default_ws not in cwds:
        raise UsageError(f"{source}: workspace {default_ws!r} is no session's cwd")
    cases: list[GateCase] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["cases"]):
        where = f"{source}: cases[{i}]"
        if not isinstance(raw, dict):
            raise UsageError(f"{where} is not an object")
        cid = _text(raw, "id", where)
        if cid in seen:
            raise UsageError(f"{where}: duplicate case id {cid!r}")
        seen.add(cid)
        expect = _text(raw, "expect", where)
        if expect not in EXPECT:
            raise UsageError(f"{where} ({cid}): expect must be one of {', '.join(EXPECT)}")
        workspace = _text(raw, "workspace", where, default_ws)
        if workspace not in cwds:
            raise UsageError(f"{where} ({cid}): workspace {workspace!r} is no session's cwd")
        cases.append(
            GateCase(
                id=cid,
                text=_text(raw, "text", where),
                expect=None if expect == "none" else Fire(expect),
                category=_text(raw, "category", where, "uncategorised"),
                lang=_text(raw, "lang", where, "unknown"),
                split=_text(raw, "split", where, "dev"),
                workspace=workspace,
            )
        )
    if not cases:
        raise UsageError(f"{source} has no cases to evaluate")
    triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS
    if "triggers" in data:
        raw_triggers = data["triggers"]
        if not isinstance(raw_triggers, list) or not all(
            isinstance(t, dict) and isinstance(t.get("word"), str) for t in raw_triggers
        ):
            raise UsageError(f'{source}: triggers must be a list of {{"word", "any_case"}}')
        triggers = tuple(Trigger(t["word"], bool(t.get("any_case", False))) for t in raw_triggers)
    return GateSet(history.name, history, cases, triggers)


def load_gate(path: Path | str) -> GateSet:
    """Load a gate set from a JSON file; a malformed one raises `UsageError`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} is not a JSON file: {exc}") from exc
    return gate_from_obj(data, source=str(path))


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: GateCase
    decision: Decision

    @property
    def right(self) -> bool:
        """Fired with the expected kind, or stayed quiet when it should."""
        return self.decision.kind == self.case.expect


@dataclass(slots=True)
class Tally:
    should_fire: int = 0
    fired_right: int = 0
    should_not: int = 0
    fired_wrongly: int = 0

    def add(self, result: CaseResult) -> None:
        if result.case.expect is None:
            self.should_not += 1
            self.fired_wrongly += result.decision.fires
        else:
            self.should_fire += 1
            self.fired_right += result.right

    @property
    def coverage(self) -> float | None:
        return self.fired_right / self.should_fire if self.should_fire else None

    @property
    def false_positive_rate(self) -> float | None:
        return self.fired_wrongly / self.should_not if self.should_not else None

    def as_json(self) -> dict[str, Any]:
        return {
            "messages": self.should_fire + self.should_not,
            "should_fire": self.should_fire,
            "fired_right": self.fired_right,
            "coverage": _rounded(self.coverage),
            "should_not_fire": self.should_not,
            "fired_wrongly": self.fired_wrongly,
            "false_positive_rate": _rounded(self.false_positive_rate),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _tally(results: Iterable[CaseResult]) -> Tally:
    tally = Tally()
    for result in results:
        tally.add(result)
    return tally


@dataclass(slots=True)
class GateReport:
    name: str
    results: list[CaseResult]
    info: dict[str, object] = field(default_factory=dict)

    def groups(self) -> dict[str, dict[str, Tally]]:
        """Tallies by split, language and category (each sorted by name)."""
        out: dict[str, dict[str, Tally]] = {}
        for key in ("split", "lang", "category"):
            names = sorted({getattr(r.case, key) for r in self.results})
            out[key] = {
                name: _tally(r for r in self.results if getattr(r.case, key) == name)
                for name in names
            }
        return out

    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.right]

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "info": self.info,
            "all": _tally(self.results).as_json(),
            **{
                key: {name: tally.as_json() for name, tally in group.items()}
                for key, group in self.groups().items()
            },
            "cases": [
                {
                    "id": r.case.id,
                    "expect": str(r.case.expect) if r.case.expect else "none",
                    "got": str(r.decision.kind) if r.decision.kind else "none",
                    "right": r.right,
                    "why": r.decision.why,
                }
                for r in self.results
            ],
        }

    def format_table(self) -> str:
        lines = [
            f"gate: {self.name} ({len(self.results)} messages; history: "
            f"{self.info.get('sessions', '?')} sessions, {self.info.get('events', '?')} events)",
            "coverage = should-fire messages that fire with the right kind; "
            "false positives = should-not-fire messages that fire",
            "",
            f"{'':24}{'messages':>9}{'coverage':>16}{'false positives':>20}",
        ]
        lines.append(_row("all", _tally(self.results)))
        for key, group in self.groups().items():
            lines.append("")
            lines += [_row(f"{key} {name}", tally) for name, tally in group.items()]
        misses = self.misses()
        if misses:
            lines += ["", f"misses ({len(misses)}):"]
            for r in misses:
                got = r.decision.kind or "none"
                lines.append(
                    f"- {r.case.id} [{r.case.expect or 'none'} -> {got}] {r.case.text[:70]!r}: "
                    f"{r.decision.why[:160]}"
                )
        return "\n".join(lines)


def _row(label: str, tally: Tally) -> str:
    def share(part: int, whole: int) -> str:
        return f"{part}/{whole} {part / whole:6.1%}" if whole else "-"

    return (
        f"{label:<24}{tally.should_fire + tally.should_not:>9}"
        f"{share(tally.fired_right, tally.should_fire):>16}"
        f"{share(tally.fired_wrongly, tally.should_not):>20}"
    )


def evaluate_gate(
    gateset: GateSet,
    *,
    index_home: Path | None = None,
    progress: Progress | None = None,
    settings: Settings | None = None,
) -> GateReport:
    """Index the set's history into a temporary home and ask the gate about every case."""
    from huiyi.store import queries

    base = settings if settings is not None else Settings.from_env()
    history = gateset.history
    with indexed(history, base, index_home=index_home, embedder="none", progress=progress) as hy:
        missing = [s.id for s in history.sessions if queries.session_by_id(hy.conn, s.id) is None]
        if missing:
            raise EvalError(f"sessions of the history were not indexed: {missing[:3]}")
        if progress is not None:
            progress(f"asking the gate about {len(gateset.cases)} messages")
        results = []
        for case in gateset.cases:
            ctx = CallerContext(hy.resolve_workspace(case.workspace), f"gate-eval-{case.id}")
            decision = decide(case.text, gateset.triggers, HistoryProbe(hy.store, ctx))
            results.append(CaseResult(case, decision))
    info: dict[str, object] = {
        "sessions": len(history.sessions),
        "events": sum(len(s.events) for s in history.sessions),
        "triggers": [t.word for t in gateset.triggers],
    }
    return GateReport(gateset.name, results, info)
