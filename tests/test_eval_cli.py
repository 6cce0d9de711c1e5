"""`huiyi eval`: a labelled set goes through the real ingestion path into a throwaway index, and
every layer is scored next to the BM25 baseline, as a table or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from huiyi.cli.root import main
from huiyi.eval.datasets import load_golden

GOLDEN = Path(__file__).parent / "golden" / "huiyi-golden.json"
OURS = ["lexical", "fuzzy", "semantic", "hybrid"]


def huiyi(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_golden_table_puts_every_layer_next_to_the_baseline(isolated_home: Path) -> None:
    result = huiyi("eval", "golden", str(GOLDEN), "--embedder", "fake")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("huiyi-golden: 64 positive queries, 43 negatives")
    layer_rows = [line.split()[0] for line in lines[2:8]]
    assert layer_rows == ["layer", "bm25", *OURS]
    for category in ("exact", "typo", "partial", "paraphrase", "cross-session", "identifier"):
        assert any(line.startswith(category) for line in lines), category
    assert "hybrid ran: lexical+fuzzy+semantic 107" in result.stdout
    assert "embedding 111/111 texts" in result.stderr  # progress goes to stderr only
    assert "embedding" not in result.stdout
    assert not (isolated_home / ".huiyi").exists()  # the user's own index is never touched


def test_golden_json_holds_metrics_and_every_ranking() -> None:
    result = huiyi("eval", "golden", str(GOLDEN), "--embedder", "fake", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    metrics = report["metrics"]
    assert list(metrics) == ["bm25", *OURS]
    hybrid, bm25 = metrics["hybrid"], metrics["bm25"]
    assert (hybrid["queries"], hybrid["negatives"], hybrid["failures"]) == (64, 43, 0)
    assert set(hybrid["overall"]) == {
        "hit@1",
        "hit@5",
        "hit@10",
        "recall@5",
        "recall@10",
        "mrr",
        "ndcg@10",
    }
    assert hybrid["overall"]["hit@5"] > bm25["overall"]["hit@5"]
    assert report["info"]["coverage"] == "111/111"
    evalset = load_golden(GOLDEN)
    known = evalset.event_ids()
    queries = report["queries"]
    assert len(queries) == 5 * len(evalset.queries)
    assert {q["layer"] for q in queries} == {"bm25", *OURS}
    assert all(len(q["ranking"]) <= 10 and set(q["ranking"]) <= known for q in queries)
    exact = next(q for q in queries if q["id"] == "exact-01" and q["layer"] == "hybrid")
    relevant = next(q.relevant for q in evalset.queries if q.id == "exact-01")
    assert exact["ranking"][0] in relevant


def test_one_layer_is_scored_without_embedding_anything() -> None:
    result = huiyi("eval", "golden", str(GOLDEN), "--layer", "lexical", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report["metrics"]) == ["bm25", "lexical"]
    assert "coverage" not in report["info"]
    assert "embedding" not in result.stderr


def test_limit_queries_scores_the_first_n_and_indexes_only_their_workspaces() -> None:
    result = huiyi("eval", "golden", str(GOLDEN), "--layer", "fuzzy", "--limit-queries", "3")
    assert result.exit_code == 0, result.output
    evalset = load_golden(GOLDEN)
    first = evalset.queries[:3]
    workspaces = {q.workspace for q in first}
    events = sum(len(s.events) for s in evalset.sessions if s.cwd in workspaces)
    positives = sum(1 for q in first if q.relevant)
    assert result.stdout.startswith(f"huiyi-golden: {positives} positive queries")
    assert f"events {events}," in result.stdout.splitlines()[0]


LOCOMO: list[dict[str, Any]] = [
    {
        "sample_id": sample,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": f"I adopted a {pet} last week."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! What is it called?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": f"The {pet} is called {name}."},
            ],
            "session_2_date_time": "9:00 am on 10 May, 2023",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "I ran a marathon in Berlin."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Wow, how long did it take?"},
            ],
        },
        "qa": [
            {"question": f"What is the {pet} called?", "evidence": ["D1:3"], "category": 4},
            {"question": "Where did Bo run a marathon?", "evidence": ["D2:1"], "category": 1},
            {"question": "Pet?", "evidence": ["D1:1; D1:3"], "category": 2},
            {"question": "Lost?", "evidence": ["D9:9"], "category": 3},
            {"question": "Trick?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
    }
    for sample, pet, name in (("conv-a", "cat", "Miso"), ("conv-b", "dog", "Rex"))
]


def test_locomo_queries_search_only_their_own_conversation(tmp_path: Path) -> None:
    path = write(tmp_path / "locomo.json", LOCOMO)
    result = huiyi("eval", "locomo", str(path), "--embedder", "fake", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["skipped"] == {
        "evidence-split": 2,
        "evidence-unknown-turn": 2,
        "question-category-5": 2,
        "question-no-evidence": 2,
    }
    assert report["metrics"]["hybrid"]["category_counts"] == {"1": 2, "2": 2, "4": 2}
    for q in report["queries"]:
        conversation = q["id"].rsplit("-q", 1)[0]
        # "Pet?" shares no word with the chat (it says which pet): declined, an empty ranking
        assert bool(q["ranking"]) == (q["id"][-1] != "2") or q["layer"] != "hybrid", q
        assert all(r.startswith(conversation + "-s") for r in q["ranking"]), q
    named = [q for q in report["queries"] if q["id"] == "conv-b-q0"]
    assert {q["layer"]: q["ranking"][0] for q in named}["lexical"] == "conv-b-s1:3"


def memdaily_file(directory: Path, name: str, person: str) -> Path:
    return write(
        directory / name,
        [
            {
                "tid": 0,
                "message_list": [
                    {"mid": 0, "message": f"我的{person}只有高中学历。", "time": "?"},
                    {"mid": 1, "message": f"我的{person}在银行上班。", "time": "?"},
                    {"mid": 2, "message": "今天午饭吃了牛肉面。", "time": "?"},
                ],
                "question_list": [
                    {"qid": 0, "question": f"我的{person}在哪里上班？", "target_step_id": [1]},
                    {"qid": 1, "question": f"{person}的学历是什么？", "target_step_id": [0]},
                ],
            }
        ],
    )


def test_memdaily_directory_reports_each_file_as_a_category(tmp_path: Path) -> None:
    memdaily_file(tmp_path, "01_simple_roles.json", "上司")
    memdaily_file(tmp_path, "02_other_roles.json", "妹妹")
    result = huiyi("eval", "memdaily", str(tmp_path), "--embedder", "fake")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("memdaily:")
    assert lines[0].split(":", 2)[2].startswith(" 4 positive queries, 0 negatives")
    by_category = [line.split() for line in lines if line.startswith(("01_", "02_"))]
    # hit@5 then recall@5 blocks, one row per file, each with its 2 queries
    assert [row[0] for row in by_category] == ["01_simple_roles", "02_other_roles"] * 2
    assert all(row[-1] == "2" for row in by_category)


def test_a_cwd_inside_a_git_repository_is_refused_not_scored(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    data = {
        "name": "nested",
        "sessions": [
            {
                "id": sid,
                "cwd": str(cwd),
                "title": sid,
                "created": 1700000000000,
                "events": [{"seq": 1, "role": "user", "time": 1700000001000, "text": text}],
            }
            for sid, cwd, text in (("top", repo, "端口被占用"), ("sub", repo / "sub", "回滚"))
        ],
        "queries": [
            {"id": "q", "query": "回滚", "workspace": str(repo / "sub"), "relevant": ["sub:1"]}
        ],
    }
    result = huiyi("eval", "golden", str(write(tmp_path / "g.json", data)), "--layer", "lexical")
    assert result.exit_code == 1
    assert f"both resolve to workspace {str(repo)!r}" in result.stderr


def test_bad_input_is_a_usage_error() -> None:
    assert huiyi("eval", "golden", "/no/such/file.json").exit_code == 2
    result = huiyi("eval", "golden", str(GOLDEN), "--embedder", "word2vec")
    assert result.exit_code == 2
    assert "unknown embedder 'word2vec'" in result.stderr


@pytest.mark.parametrize("layer", ["semantic", "hybrid"])
def test_an_index_home_is_kept_and_reused_without_embedding_again(
    tmp_path: Path, layer: str
) -> None:
    args = ["eval", "golden", str(GOLDEN), "--layer", layer, "--embedder", "fake", "--json"]
    args += ["--index-home", str(tmp_path / "idx")]
    first, second = huiyi(*args), huiyi(*args)
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    info = [json.loads(r.stdout)["info"] for r in (first, second)]
    assert [i["embedded"] for i in info] == [111, 0]
    assert info[1]["coverage"] == "111/111"
    rankings = [json.loads(r.stdout)["queries"] for r in (first, second)]
    assert rankings[0] == rankings[1]


def test_help_lists_the_embedder_specs_without_loading_numpy() -> None:
    import subprocess
    import sys

    from huiyi.cli.eval import EMBEDDER_SPECS
    from huiyi.search.embedding.factory import SPEC_HELP

    assert EMBEDDER_SPECS == SPEC_HELP
    code = "import sys, huiyi.cli.eval; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
