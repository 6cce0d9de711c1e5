"""Loaders turn golden, LoCoMo and MemDaily files into one shape, repairing what can be repaired
and counting what cannot; the export writes sessions the ingestion path can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from huiyi.errors import UsageError
from huiyi.eval.datasets import (
    load,
    load_golden,
    load_locomo,
    load_memdaily,
    split_event_id,
    to_generic_jsonl,
)


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


GOLDEN: dict[str, Any] = {
    "name": "tiny",
    "sessions": [
        {
            "id": "s1",
            "cwd": "/w/a",
            "title": "迁移回滚",
            "created": 1700000000000,
            "events": [
                {"seq": 2, "role": "assistant", "time": 1700000002000, "text": "已经回滚到 0041"},
                {"seq": 1, "role": "user", "time": 1700000001000, "text": "迁移失败了，怎么回滚？"},
            ],
        }
    ],
    "queries": [
        {
            "id": "q1",
            "query": "回滚",
            "workspace": "/w/a",
            "relevant": ["s1:2"],
            "category": "exact",
        },
        {"id": "q2", "query": "kubernetes", "relevant": []},
    ],
}


def test_golden_loads_sessions_events_and_negatives(tmp_path: Path) -> None:
    evalset = load_golden(write(tmp_path / "g.json", GOLDEN))
    assert evalset.name == "tiny"
    session = evalset.sessions[0]
    assert [e.seq for e in session.events] == [1, 2]
    assert session.events[0].text == "迁移失败了，怎么回滚？"
    q1, q2 = evalset.queries
    assert q1.relevant == ("s1:2",) and q1.workspace == "/w/a" and q1.category == "exact"
    assert not q1.negative
    assert q2.negative and q2.workspace is None and q2.category is None
    assert evalset.event_ids() == {"s1:1", "s1:2"}
    assert load("golden", tmp_path / "g.json").queries == evalset.queries


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda g: g["queries"][0].update(relevant=["s1:9"]), r"name no event: \['s1:9'\]"),
        (lambda g: g["queries"][0].update(workspace="/w/zzz"), "no session's cwd"),
        (lambda g: g["sessions"][0]["events"][0].update(seq=1), "duplicate seq 1"),
        (lambda g: g["sessions"][0]["events"][0].update(role="system"), "role must be one of"),
        (lambda g: g["sessions"][0].pop("cwd"), "'cwd' is missing"),
        (lambda g: g["queries"].append(dict(g["queries"][1])), "duplicate query id 'q2'"),
    ],
)
def test_golden_rejects_mistakes_naming_them(tmp_path: Path, mutate: Any, message: str) -> None:
    data = json.loads(json.dumps(GOLDEN))
    mutate(data)
    with pytest.raises(UsageError, match=message):
        load_golden(write(tmp_path / "g.json", data))


def test_golden_reports_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a JSON file"):
        load_golden(path)


LOCOMO: list[dict[str, Any]] = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"},
                {"speaker": "Bo", "dia_id": "D1:3", "text": "Mine is a dog."},
            ],
            "session_2_date_time": "9:00 am on 10 May, 2023",
            "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "The cat is called Miso."}],
        },
        "qa": [
            {"question": "Cat name?", "answer": "Miso", "evidence": ["D2:1"], "category": 4},
            {"question": "Pets?", "answer": "x", "evidence": ["D1:1; D1:3"], "category": 1},
            {"question": "Zero?", "answer": "x", "evidence": ["D2:01", "D"], "category": 2},
            {"question": "Colon?", "answer": "x", "evidence": ["D:1:2", "D9:9"], "category": 3},
            {"question": "Lost?", "answer": "x", "evidence": ["D7:7"], "category": 3},
            {"question": "Trick?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
    }
]


def test_locomo_maps_turns_to_sessions_and_repairs_evidence(tmp_path: Path) -> None:
    evalset = load_locomo(write(tmp_path / "locomo.json", LOCOMO))
    s1, s2 = evalset.sessions
    assert (s1.id, s1.cwd, [e.seq for e in s1.events]) == (
        "conv-1-s1",
        "/eval/locomo/conv-1",
        [1, 2, 3],
    )
    assert s1.created == 1683554160000  # 2023-05-08 13:56 UTC
    assert s1.events[0].role == "user" and s1.events[1].role == "assistant"
    assert s1.events[1].text == "Bo: Lovely! [shares an image: a cat]"
    assert s2.events[0].text == "Ana: The cat is called Miso."
    relevant = {q.query: q.relevant for q in evalset.queries}
    assert relevant == {
        "Cat name?": ("conv-1-s2:1",),
        "Pets?": ("conv-1-s1:1", "conv-1-s1:3"),
        "Zero?": ("conv-1-s2:1",),
        "Colon?": ("conv-1-s1:2",),
    }
    assert {q.category for q in evalset.queries} == {"1", "2", "3", "4"}
    assert all(q.workspace == "/eval/locomo/conv-1" for q in evalset.queries)
    assert evalset.skipped == {
        "evidence-malformed": 1,  # "D"
        "evidence-renumbered": 2,  # "D2:01", "D:1:2"
        "evidence-split": 1,  # "D1:1; D1:3"
        "evidence-unknown-turn": 2,  # "D9:9", "D7:7"
        "question-category-5": 1,
        "question-no-evidence": 1,  # "Lost?"
    }


def memdaily_file(tmp_path: Path, name: str) -> Path:
    data = [
        {
            "tid": 0,
            "message_list": [
                {
                    "mid": 0,
                    "message": "我的上司只有高中学历。",
                    "time": "2024年04月01日 周一 08:38",
                },
                {"mid": 1, "message": "我的上司在银行上班。", "time": "2024年04月02日 周二 07:02"},
            ],
            "question_list": [
                {"qid": 0, "question": "只有高中学历的人在哪上班？", "target_step_id": [0, 1]},
                {"qid": 1, "question": "坏的", "target_step_id": [5]},
            ],
        },
        {
            "tid": 1,
            "message_list": [{"mid": 0, "message": "我妹妹喜欢打羽毛球。", "time": "?"}],
            "question_list": [{"qid": 0, "question": "谁喜欢羽毛球？", "target_step_id": [0]}],
        },
    ]
    return write(tmp_path / name, data)


def test_memdaily_maps_trajectories_to_sessions_of_one_workspace(tmp_path: Path) -> None:
    evalset = load_memdaily(memdaily_file(tmp_path, "01_simple.json"))
    assert [s.id for s in evalset.sessions] == ["01_simple-t0", "01_simple-t1"]
    assert {s.cwd for s in evalset.sessions} == {"/eval/memdaily/01_simple"}
    first = evalset.sessions[0].events
    assert first[0].time == 1711960680000  # 2024-04-01 08:38 UTC
    assert first[1].time - first[0].time == 22 * 3600_000 + 24 * 60_000
    assert evalset.sessions[1].events[0].time > 10**11  # unparsable time: still epoch ms
    assert [(q.id, q.relevant) for q in evalset.queries] == [
        ("01_simple-t0-q0", ("01_simple-t0:0", "01_simple-t0:1")),
        ("01_simple-t1-q0", ("01_simple-t1:0",)),
    ]
    assert {q.category for q in evalset.queries} == {"01_simple"}
    assert evalset.skipped == {"question-no-target": 1, "target-unknown-message": 1}


def test_memdaily_directory_gives_one_workspace_per_file(tmp_path: Path) -> None:
    memdaily_file(tmp_path, "a.json")
    memdaily_file(tmp_path, "b.json")
    evalset = load_memdaily(tmp_path)
    assert evalset.workspaces() == ["/eval/memdaily/a", "/eval/memdaily/b"]
    assert evalset.categories() == ["a", "b"]
    assert len(evalset.queries) == 4


def test_generic_jsonl_export_writes_one_file_per_session(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOLDEN))
    data["sessions"].append({**data["sessions"][0], "id": "s/1", "events": []})
    data["sessions"].append({**data["sessions"][0], "id": "s:1", "events": []})
    evalset = load_golden(write(tmp_path / "g.json", data))
    paths = to_generic_jsonl(evalset, tmp_path / "out")
    assert len(set(paths)) == 3
    lines = paths[0].read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "type": "session",
        "id": "s1",
        "cwd": "/w/a",
        "title": "迁移回滚",
        "created": 1700000000000,
    }
    assert json.loads(lines[1]) == {
        "seq": 1,
        "time": 1700000001000,
        "role": "user",
        "text": "迁移失败了，怎么回滚？",
    }
    assert "迁移失败" in lines[1]  # written as UTF-8, not \\u escapes
    assert json.loads(paths[2].read_text(encoding="utf-8").splitlines()[0])["id"] == "s:1"


def test_event_ids_split_at_the_last_colon() -> None:
    assert split_event_id("conv-26-s3:7") == ("conv-26-s3", 7)
    assert split_event_id("a:b:12") == ("a:b", 12)
    with pytest.raises(ValueError, match="not an event id"):
        split_event_id("s1")


def test_unknown_set_kind_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="golden, locomo, memdaily"):
        load("longmemeval", tmp_path)


def test_exported_sessions_read_back_unchanged_through_the_generic_reader(tmp_path: Path) -> None:
    from huiyi.model import Kind
    from huiyi.sources.base import Cursor
    from huiyi.sources.generic import GenericReader

    data = json.loads(json.dumps(GOLDEN))
    data["sessions"][0]["events"].append(
        {"seq": 7, "role": "tool", "time": 1700000009000, "text": "$ alembic downgrade -1"}
    )
    evalset = load_golden(write(tmp_path / "g.json", data))
    (path,) = to_generic_jsonl(evalset, tmp_path / "out")
    result = GenericReader([tmp_path / "out"]).read(path, Cursor())
    assert not result.skipped
    (chunk,) = result.chunks
    session = evalset.sessions[0]
    update = chunk.session
    assert (update.id, update.cwd, update.title, update.created) == (
        session.id,
        session.cwd,
        session.title,
        session.created,
    )
    assert [(e.seq, e.role, e.time, e.text) for e in chunk.events] == [
        (e.seq, e.role, e.time, e.text) for e in session.events
    ]
    assert chunk.events[-1].kind == Kind.TOOL_RESULT


def test_memdaily_asks_questions_about_people_in_files_about_events(tmp_path: Path) -> None:
    memdaily_file(tmp_path, "01_simple_roles.json")
    memdaily_file(tmp_path, "01_simple_events.json")
    memdaily_file(tmp_path, "02_other.json")  # neither kind: asks and is asked nothing foreign
    evalset = load_memdaily(tmp_path)
    negatives = {(q.query, q.workspace) for q in evalset.queries if q.negative}
    assert negatives == {
        (question, f"/eval/memdaily/01_simple_{kind}")
        for question in ("只有高中学历的人在哪上班？", "谁喜欢羽毛球？")
        for kind in ("roles", "events")
    }
    assert {q.category for q in evalset.queries if q.negative} == {"negative"}
    assert len(load_memdaily(tmp_path, negatives=0).queries) == 6


def test_locomo_asks_each_conversation_about_people_it_never_mentions(tmp_path: Path) -> None:
    def sample(sample_id: str, a: str, b: str) -> dict[str, object]:
        turns = [{"speaker": a, "dia_id": "D1:1", "text": f"{b}, I painted a lake."}]
        qa = [{"question": f"What did {a} paint?", "evidence": ["D1:1"], "category": 1}]
        return {
            "sample_id": sample_id,
            "conversation": {"speaker_a": a, "speaker_b": b, "session_1": turns},
            "qa": qa,
        }

    path = write(
        tmp_path / "l.json",
        [sample("c1", "Ana", "Bo"), sample("c2", "Cy", "Di"), sample("c3", "Ana", "Ed")],
    )
    negatives = {(q.query, q.workspace) for q in load_locomo(path).queries if q.negative}
    # c1 and c3 share Ana: neither is asked the other's question
    assert negatives == {
        ("What did Ana paint?", "/eval/locomo/c2"),
        ("What did Cy paint?", "/eval/locomo/c1"),
        ("What did Cy paint?", "/eval/locomo/c3"),
    }
