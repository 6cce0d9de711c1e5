"""Labelled retrieval sets, loaded into one in-memory shape whatever file they came from.

Every set becomes an `EvalSet` (`eval.evalset`, re-exported here for the loaders' callers):
sessions of events and queries whose `relevant` list names events as `"<session id>:<seq>"`.
Keeping one shape means the runner, the metrics and the baseline never care which data set
they score.

Three sources:

* **golden** (`load_golden`): our own JSON format, documented in `docs/eval.md`. Strict: a
  malformed file or a relevant id that names no event is an error, because we write it.
* **LoCoMo** (`load_locomo`): each conversation is one workspace (`/eval/locomo/<sample_id>`),
  each `session_N` one session (`<sample_id>-s<N>`), each turn one event whose seq is the turn
  number of its `dia_id` (`D3:7` -> `conv-26-s3:7`). `speaker_a` speaks as `user`,
  `speaker_b` as `assistant`; the speaker's name starts the text and an image caption is
  appended, since questions ask about both. QA categories 1-4 only (5 is adversarial, with no
  evidence to find). Evidence is public data with typos: `"D8:6; D9:17"` is split,
  `"D30:05"` and `"D:11:26"` are renumbered, `"D"` and ids of turns that do not exist are
  dropped, and a question left without evidence is dropped; each case is counted in `skipped`.
* **MemDaily** (`load_memdaily`): each file is one corpus and one workspace
  (`/eval/memdaily/<file stem>`), each trajectory one session (`<stem>-t<tid>`), each message
  one `user` event with seq = `mid`; `target_step_id` gives the relevant events. All
  trajectories of a file share the workspace, so a question competes with every other
  trajectory's similar messages, which is what makes the task hard. The file stem is the query
  category, so a directory of files reports per file.

`to_generic_jsonl` writes a set back out as generic JSONL session files, so the runner can load
it through the real ingestion path instead of a shortcut.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from huiyi.errors import UsageError
from huiyi.eval.evalset import (
    EvalEvent,
    EvalQuery,
    EvalSession,
    EvalSet,
    event_id,
    split_event_id,
)
from huiyi.eval.negatives import PER_WORKSPACE, foreign_negatives

__all__ = [
    "EvalEvent",
    "EvalQuery",
    "EvalSession",
    "EvalSet",
    "event_id",
    "load",
    "load_golden",
    "load_locomo",
    "load_memdaily",
    "split_event_id",
    "to_generic_jsonl",
]

ROLES = frozenset({"user", "assistant", "tool"})

#: Time given to events whose source has none we can parse (2020-09-13, epoch ms). Must stay
#: above 1e11 so readers that take small numbers as epoch seconds read it as milliseconds.
FALLBACK_TIME = 1_600_000_000_000


# --------------------------------------------------------------------------- golden


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UsageError(f"{where}: field {key!r} is missing or not {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} is not a JSON file: {exc}") from exc


def golden_from_obj(data: Any, *, source: str = "golden set") -> EvalSet:
    """Validate and convert an already-parsed golden object (see `load_golden`)."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a JSON object with 'sessions' and 'queries'")
    sessions: list[EvalSession] = []
    seen_sessions: set[str] = set()
    for i, raw in enumerate(_require(data, "sessions", list, source)):
        where = f"{source}: sessions[{i}]"
        if not isinstance(raw, dict):
            raise UsageError(f"{where} is not an object")
        sid = _require(raw, "id", str, where)
        if sid in seen_sessions:
            raise UsageError(f"{where}: duplicate session id {sid!r}")
        seen_sessions.add(sid)
        events: list[EvalEvent] = []
        seqs: set[int] = set()
        for j, ev in enumerate(_require(raw, "events", list, where)):
            ewhere = f"{where}.events[{j}]"
            if not isinstance(ev, dict):
                raise UsageError(f"{ewhere} is not an object")
            seq = _require(ev, "seq", int, ewhere)
            role = _require(ev, "role", str, ewhere)
            if role not in ROLES:
                raise UsageError(f"{ewhere}: role must be one of {sorted(ROLES)}, got {role!r}")
            if seq in seqs:
                raise UsageError(f"{ewhere}: duplicate seq {seq}")
            seqs.add(seq)
            events.append(
                EvalEvent(
                    seq, role, _require(ev, "time", int, ewhere), _require(ev, "text", str, ewhere)
                )
            )
        sessions.append(
            EvalSession(
                id=sid,
                cwd=_require(raw, "cwd", str, where),
                title=_require(raw, "title", str, where),
                created=_require(raw, "created", int, where),
                events=tuple(sorted(events, key=lambda e: e.seq)),
            )
        )
    known = {event_id(s.id, e.seq) for s in sessions for e in s.events}
    cwds = {s.cwd for s in sessions}
    queries: list[EvalQuery] = []
    seen_queries: set[str] = set()
    for i, raw in enumerate(_require(data, "queries", list, source)):
        where = f"{source}: queries[{i}]"
        if not isinstance(raw, dict):
            raise UsageError(f"{where} is not an object")
        qid = _require(raw, "id", str, where)
        if qid in seen_queries:
            raise UsageError(f"{where}: duplicate query id {qid!r}")
        seen_queries.add(qid)
        relevant = _require(raw, "relevant", list, where)
        unknown = [r for r in relevant if not isinstance(r, str) or r not in known]
        if unknown:
            raise UsageError(f"{where} ({qid}): relevant ids name no event: {unknown}")
        workspace = raw.get("workspace")
        if workspace is not None and workspace not in cwds:
            raise UsageError(f"{where} ({qid}): workspace {workspace!r} is no session's cwd")
        category = raw.get("category")
        queries.append(
            EvalQuery(
                id=qid,
                query=_require(raw, "query", str, where),
                relevant=tuple(dict.fromkeys(relevant)),
                workspace=workspace if isinstance(workspace, str) else None,
                category=str(category) if category is not None else None,
            )
        )
    name = data.get("name")
    return EvalSet(name if isinstance(name, str) else source, sessions, queries, {})


def load_golden(path: Path | str) -> EvalSet:
    """Load a set in our golden format; any malformed part raises `UsageError`.

    A set of queries alone may name the file whose sessions it asks about instead of holding
    them (`"sessions_from": "huiyi-golden.json"`, relative to its own file), so a second set of
    questions over one history does not copy the history."""
    path = Path(path)
    data = _read_json(path)
    if isinstance(data, dict) and "sessions" not in data and "sessions_from" in data:
        other = data["sessions_from"]
        if not isinstance(other, str) or not other:
            raise UsageError(f"{path}: 'sessions_from' must name a golden file")
        sessions = _read_json(path.parent / other)
        if not isinstance(sessions, dict):
            raise UsageError(f"{path.parent / other}: expected a JSON object with 'sessions'")
        data = {**data, "sessions": _require(sessions, "sessions", list, str(path.parent / other))}
    return golden_from_obj(data, source=str(path))


# --------------------------------------------------------------------------- LoCoMo

_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")
LOCOMO_CATEGORIES = frozenset({1, 2, 3, 4})


def _parse_locomo_time(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return int(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def _normalise_evidence(raw: object, known: set[str], skipped: Counter[str]) -> list[str]:
    """Turn one QA's evidence list into canonical dia ids that exist (see module doc)."""
    pieces: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        if not isinstance(item, str):
            skipped["evidence-malformed"] += 1
            continue
        parts = [p for p in re.split(r"[;,\s]+", item.strip()) if p]
        if len(parts) > 1:
            skipped["evidence-split"] += 1
        pieces.extend(parts)
    out: list[str] = []
    for piece in pieces:
        m = _DIA_ID.fullmatch(piece)
        if m is None:
            skipped["evidence-malformed"] += 1
            continue
        canonical = f"D{int(m.group(1))}:{int(m.group(2))}"
        if canonical != piece:
            skipped["evidence-renumbered"] += 1
        if canonical not in known:
            skipped["evidence-unknown-turn"] += 1
            continue
        if canonical not in out:
            out.append(canonical)
    return out


def load_locomo(path: Path | str, *, negatives: int | None = None) -> EvalSet:
    """Load LoCoMo (`locomo10.json` shape) with categories 1-4; repairs are counted.

    `negatives` (default `negatives.PER_WORKSPACE`) questions of other conversations are
    asked in each one: those that name a speaker of their own conversation and neither of
    this one's (`eval.negatives`)."""
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a JSON list of LoCoMo samples")
    skipped: Counter[str] = Counter()
    sessions: list[EvalSession] = []
    queries: list[EvalQuery] = []
    speakers: dict[str, set[str]] = {}
    for index, sample in enumerate(data):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            skipped["sample-malformed"] += 1
            continue
        sample_id = str(sample.get("sample_id") or f"sample-{index}")
        conv: dict[str, Any] = sample["conversation"]
        cwd = f"/eval/locomo/{sample_id}"
        speaker_a = conv.get("speaker_a")
        speakers[cwd] = {str(conv.get(k)) for k in ("speaker_a", "speaker_b") if conv.get(k)}
        dia_to_event: dict[str, str] = {}
        numbers = sorted(
            int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)) is not None
        )
        for n in numbers:
            turns = conv.get(f"session_{n}")
            if not isinstance(turns, list):
                continue
            sid = f"{sample_id}-s{n}"
            start = _parse_locomo_time(conv.get(f"session_{n}_date_time"))
            if start is None:
                skipped["session-bad-date"] += 1
                start = FALLBACK_TIME + n * 86_400_000
            events: list[EvalEvent] = []
            for position, turn in enumerate(turns):
                m = (
                    _DIA_ID.fullmatch(str(turn.get("dia_id", "")))
                    if isinstance(turn, dict)
                    else None
                )
                if m is None or int(m.group(1)) != n or not isinstance(turn.get("text"), str):
                    skipped["turn-malformed"] += 1
                    continue
                seq = int(m.group(2))
                dia = f"D{n}:{seq}"
                if dia in dia_to_event:
                    skipped["turn-duplicate"] += 1
                    continue
                speaker = str(turn.get("speaker", ""))
                text = f"{speaker}: {turn['text']}" if speaker else turn["text"]
                caption = turn.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text += f" [shares an image: {caption.strip()}]"
                role = "user" if speaker == speaker_a else "assistant"
                events.append(EvalEvent(seq, role, start + position * 60_000, text))
                dia_to_event[dia] = event_id(sid, seq)
            if events:
                title = f"{conv.get('speaker_a', '?')} & {conv.get('speaker_b', '?')}, session {n}"
                sessions.append(EvalSession(sid, cwd, title, start, tuple(events)))
        for qi, qa in enumerate(sample.get("qa") or []):
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                skipped["question-malformed"] += 1
                continue
            category = qa.get("category")
            if category not in LOCOMO_CATEGORIES:
                skipped[f"question-category-{category}"] += 1
                continue
            evidence = _normalise_evidence(qa.get("evidence"), set(dia_to_event), skipped)
            if not evidence:
                skipped["question-no-evidence"] += 1
                continue
            queries.append(
                EvalQuery(
                    id=f"{sample_id}-q{qi}",
                    query=qa["question"],
                    relevant=tuple(dia_to_event[d] for d in evidence),
                    workspace=cwd,
                    category=str(category),
                )
            )

    def admissible(query: EvalQuery, workspace: str) -> bool:
        words = set(re.findall(r"\w+", query.query))
        own = speakers.get(query.workspace or "", set())
        return bool(words & own) and not words & speakers[workspace]

    queries += foreign_negatives(
        queries,
        sorted(speakers),
        admissible,
        per_workspace=PER_WORKSPACE if negatives is None else negatives,
    )
    return EvalSet(f"locomo:{path.name}", sessions, queries, dict(sorted(skipped.items())))


# --------------------------------------------------------------------------- MemDaily

_MEMDAILY_TIME = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:\s*\S+)?\s+(\d{1,2}):(\d{2})")


def _parse_memdaily_time(value: object) -> int | None:
    m = _MEMDAILY_TIME.search(value) if isinstance(value, str) else None
    if m is None:
        return None
    year, month, day, hour, minute = (int(g) for g in m.groups())
    try:
        when = datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError:
        return None
    return int(when.timestamp() * 1000)


def _load_memdaily_file(
    path: Path, sessions: list[EvalSession], queries: list[EvalQuery], skipped: Counter[str]
) -> None:
    data = _read_json(path)
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a JSON list of MemDaily trajectories")
    stem = path.stem
    cwd = f"/eval/memdaily/{stem}"
    for index, traj in enumerate(data):
        if not isinstance(traj, dict) or not isinstance(traj.get("message_list"), list):
            skipped["trajectory-malformed"] += 1
            continue
        tid = traj.get("tid", index)
        sid = f"{stem}-t{tid}"
        events: list[EvalEvent] = []
        last_time = FALLBACK_TIME
        for msg in traj["message_list"]:
            mid = msg.get("mid") if isinstance(msg, dict) else None
            if not isinstance(mid, int) or not isinstance(msg.get("message"), str):
                skipped["message-malformed"] += 1
                continue
            when = _parse_memdaily_time(msg.get("time"))
            last_time = when if when is not None else last_time + 60_000
            events.append(EvalEvent(mid, "user", last_time, msg["message"]))
        if not events:
            skipped["trajectory-empty"] += 1
            continue
        events.sort(key=lambda e: e.seq)
        mids = {e.seq for e in events}
        sessions.append(EvalSession(sid, cwd, f"{stem} #{tid}", events[0].time, tuple(events)))
        for qa in traj.get("question_list") or []:
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                skipped["question-malformed"] += 1
                continue
            targets = qa.get("target_step_id")
            targets = targets if isinstance(targets, list) else [targets]
            relevant = [event_id(sid, t) for t in targets if isinstance(t, int) and t in mids]
            if len(relevant) != len(targets):
                skipped["target-unknown-message"] += len(targets) - len(relevant)
            if not relevant:
                skipped["question-no-target"] += 1
                continue
            queries.append(
                EvalQuery(
                    id=f"{sid}-q{qa.get('qid', len(queries))}",
                    query=qa["question"],
                    relevant=tuple(dict.fromkeys(relevant)),
                    workspace=cwd,
                    category=stem,
                )
            )


def load_memdaily(path: Path | str, *, negatives: int | None = None) -> EvalSet:
    """Load one MemDaily file, or every `*.json` in a directory (one workspace per file).

    `negatives` (default `negatives.PER_WORKSPACE`) questions of other files are asked in
    each one: questions about people (`*_roles` files) in files about events and the other
    way round, never between two files of a kind (they share trajectories)."""
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise UsageError(f"no MemDaily *.json files in {path}")
    sessions: list[EvalSession] = []
    queries: list[EvalQuery] = []
    skipped: Counter[str] = Counter()
    for file in files:
        _load_memdaily_file(file, sessions, queries, skipped)

    def kind(workspace: str | None) -> str | None:
        suffix = (workspace or "").rsplit("_", 1)[-1]
        return suffix if suffix in ("roles", "events") else None

    queries += foreign_negatives(
        queries,
        sorted({s.cwd for s in sessions}),
        lambda query, workspace: None is not kind(query.workspace) != kind(workspace) is not None,
        per_workspace=PER_WORKSPACE if negatives is None else negatives,
    )
    return EvalSet(f"memdaily:{path.name}", sessions, queries, dict(sorted(skipped.items())))


LOADERS = {"golden": load_golden, "locomo": load_locomo, "memdaily": load_memdaily}


def load(kind: str, path: Path | str) -> EvalSet:
    """Load a set by kind name (`golden`, `locomo`, `memdaily`), as `huiyi eval KIND PATH` does."""
    loader = LOADERS.get(kind)
    if loader is None:
        raise UsageError(f"unknown evaluation set {kind!r}; use one of: {', '.join(LOADERS)}")
    return loader(path)


# --------------------------------------------------------------------------- export


def _safe_file_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:120] or "session"


def to_generic_jsonl(evalset: EvalSet, directory: Path | str) -> list[Path]:
    """Write each session as one generic JSONL file (header line, then one line per event).

    Returns the files in session order. File names come from session ids, made filesystem-safe
    and numbered so two ids never collide.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for number, session in enumerate(evalset.sessions):
        path = directory / f"{number:05d}-{_safe_file_name(session.id)}.jsonl"
        header = {
            "type": "session",
            "id": session.id,
            "cwd": session.cwd,
            "title": session.title,
            "created": session.created,
        }
        lines = [json.dumps(header, ensure_ascii=False)]
        lines.extend(
            json.dumps(
                {"seq": e.seq, "time": e.time, "role": e.role, "text": e.text},
                ensure_ascii=False,
            )
            for e in session.events
        )
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
