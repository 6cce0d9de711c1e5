"""No-copy mode (`keepText = false`): the index keeps no text of the conversation, and every exit
reads it from the log again; a log that is gone leaves nothing, and nothing crashes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.model import CallerContext
from huiyi.sources.base import Reader
from huiyi.store import export, readthrough
from huiyi.store.readthrough import GONE_NOTE
from tests import test_hooks as hooks
from tests import test_privacy as privacy
from tests.builders import dsh
from tests.builders.claude import assistant, user, write_transcript
from tests.test_no_secret_leaves import PLACES, every_output, write_world
from tests.test_redact import FAMILIES

CWD = "/home/ana/api"
OTHER_CWD = "/home/ana/web"
ENGLISH = "zebrafinch migration backfill"
CHINESE = "鸬鹚数据迁移回填"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _history(home: Path) -> Path:
    path = write_transcript(
        home / ".claude",
        CWD,
        [
            user(f"we planned the {ENGLISH} for the orders table"),
            assistant(f"好的，{CHINESE}放在周五晚上做，先备份。"),
            user(f"the deploy key is {TOKEN}, keep it out of logs"),
            assistant("noted; rotate it after the backfill"),
        ],
    )
    write_transcript(
        home / ".claude",
        OTHER_CWD,
        [user("what colour should the login button be"), assistant("blue, like the logo")],
        session_id="0a0b0c0d-1111-4222-8333-444455556666",
    )
    return path


def _index(monkeypatch: pytest.MonkeyPatch, *, keep: bool) -> None:
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "true" if keep else "false")
    with Huiyi() as hy:
        hy.index()
        hy.embed()


def _bytes_under(home: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in sorted(home.rglob("*")) if p.is_file()]


def _planted(data: bytes) -> list[str]:
    """The planted phrases `data` spells out. (Single words are another matter: the full-text
    index keeps its terms, so without keyed tokens a word can be found in the file, never the
    phrase or message it was said in.)"""
    found = []
    for phrase in (ENGLISH, CHINESE, "we planned the", "先备份", TOKEN):
        for encoding in ("utf-8", "utf-16-le"):
            if phrase.encode(encoding) in data:
                found.append(f"{phrase} ({encoding})")
    return found


def test_the_planted_phrases_are_nowhere_under_huiyi_home_yet_found_and_shown(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(isolated_home)
    _index(monkeypatch, keep=False)
    with Huiyi() as hy:
        assert not hy.keeps_text
        english = hy.search("zebrafinch backfill", workspace=CWD)
        chinese = hy.search("鸬鹚数据迁移", workspace=CWD)
        assert english.hits and "zebrafinch" in english.hits[0].snippet
        assert chinese.hits and "鸬鹚" in chinese.hits[0].snippet
        recall = hy.recall(CallerContext(CWD, None))
        hit = chinese.hits[0]
        shown = recall.expand(hit.seq, session_id=hit.session_id).text
        assert CHINESE in shown and ENGLISH in shown
        assert TOKEN not in shown  # the same safety exit: the key is masked
        assert [e.text for e in hy.read(hit.session_id) if CHINESE in e.text]
        hy.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        # everything on disk while the index is open (its -wal and -shm too), and after
        leaks = [(p.name, _planted(data)) for p, data in _bytes_under(isolated_home / ".huiyi")]
        assert [leak for leak in leaks if leak[1]] == []
    leaks = [(p.name, _planted(data)) for p, data in _bytes_under(isolated_home / ".huiyi")]
    assert [leak for leak in leaks if leak[1]] == []
    cli = CliRunner().invoke(main, ["search", "zebrafinch", "--workspace", CWD])
    assert cli.exit_code == 0, cli.output
    assert "zebrafinch" in cli.output


def test_a_deleted_log_leaves_nothing_through_any_exit_and_doctor_counts_it(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(isolated_home)
    _index(monkeypatch, keep=False)
    with Huiyi() as hy:
        session = hy.search("zebrafinch", workspace=CWD).hits[0].session_id
    path.unlink()
    with Huiyi() as hy:
        result = hy.search("zebrafinch backfill", workspace=CWD)
        assert not [h for h in result.hits if "zebrafinch" in h.snippet]
        assert all("zebrafinch" not in h.snippet for h in result.hits)
        found = hy.search("鸬鹚数据迁移", workspace=CWD, abstain=False)
        assert all(CHINESE not in h.snippet for h in found.hits)
        if found.hits or result.hits:
            assert any(GONE_NOTE in note for note in (*result.notes, *found.notes))
        assert all(CHINESE not in e.text for e in hy.read(session))
        recall = hy.recall(CallerContext(CWD, None))
        for out in (
            recall.history("zebrafinch backfill").text,
            recall.expand(1, session_id=session).text,
            recall.session_read(session).text,
        ):
            assert "orders table" not in out and CHINESE not in out, out
        report = hy.doctor()
        assert report["no_copy"]["gone"] == 4
        # the other log is still there and still read
        assert hy.search("login button colour", workspace=OTHER_CWD).hits
    show = CliRunner().invoke(main, ["show", session])
    assert "zebrafinch" not in show.output and "Traceback" not in show.output
    doctor = CliRunner().invoke(main, ["doctor"])
    assert doctor.exit_code in (0, 1) and "4 of them gone" in doctor.output


def test_both_modes_rank_alike(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(isolated_home)
    queries = ["zebrafinch backfill", "鸬鹚数据迁移", "deploy key", "rotate", "orders table"]
    rankings = {}
    for keep in (True, False):
        monkeypatch.setenv("HUIYI_HOME", str(isolated_home / f".huiyi-{keep}"))
        _index(monkeypatch, keep=keep)
        with Huiyi() as hy:
            assert hy.keeps_text is keep
            rankings[keep] = [
                [(h.session_id, h.seq, h.snippet) for h in hy.search(q, workspace=CWD).hits]
                for q in queries
            ]
    assert rankings[True] == rankings[False]


def test_switching_on_removes_the_text_and_off_reads_it_back(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(isolated_home)
    _index(monkeypatch, keep=True)
    index = isolated_home / ".huiyi" / "index.db"
    monkeypatch.delenv("HUIYI_KEEP_TEXT")
    on = CliRunner().invoke(main, ["no-copy", "on"])
    assert on.exit_code == 0, on.output
    assert "removed the text of" in on.output and "vacuumed" in on.output
    assert _planted(index.read_bytes()) == []
    with Huiyi() as hy:
        assert not hy.keeps_text
        assert "zebrafinch" in hy.search("zebrafinch", workspace=CWD).hits[0].snippet
    off = CliRunner().invoke(main, ["no-copy", "off"])
    assert off.exit_code == 0, off.output
    assert "read the text of 6 events back" in off.output
    with Huiyi() as hy:
        assert hy.keeps_text
        (session,) = [s for s in hy.sessions(workspace=CWD)]
        assert "zebrafinch" in session.title
    for path in (isolated_home / ".claude").rglob("*.jsonl"):
        path.unlink()
    with Huiyi() as hy:  # kept again: the text outlives its log
        assert "zebrafinch" in hy.search("zebrafinch", workspace=CWD).hits[0].snippet


def test_a_mode_the_index_was_not_made_in_is_warned_about_not_applied(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(isolated_home)
    _index(monkeypatch, keep=True)
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "false")
    with Huiyi() as hy:
        report = hy.index()
        assert hy.keeps_text
        assert any("huiyi no-copy on" in w for w in report.warnings)


def test_index_no_copy_makes_a_first_index_keep_no_text(isolated_home: Path) -> None:
    _history(isolated_home)
    out = CliRunner().invoke(main, ["index", "--no-copy", "--no-embed"])
    assert out.exit_code == 0, out.output
    with Huiyi() as hy:
        assert not hy.keeps_text
    assert _planted((isolated_home / ".huiyi" / "index.db").read_bytes()) == []


# -- the safety suites in this mode ------------------------------------------------------------


@pytest.mark.parametrize("place", PLACES)
def test_a_secret_anywhere_in_a_session_never_reaches_any_output_in_this_mode(
    place: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`test_no_secret_leaves` in no-copy mode, one family per place (a DSH history: zstd
    frames and a compaction read again through every exit)."""
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "false")
    _, secret = FAMILIES[0]
    cwd = write_world(isolated_home, secret, place, "数据库 before", "回滚 after")
    everything = every_output(cwd, monkeypatch)
    with Huiyi() as hy:
        assert not hy.keeps_text
    assert "marker" in everything
    assert secret not in everything
    assert _planted((isolated_home / ".huiyi" / "index.db").read_bytes()) == []


def _privacy_cases() -> list[object]:
    cases: list[object] = [
        pytest.param(privacy.test_a_marked_title_hides_the_session_everywhere, m, id=f"title-{i}")
        for i, m in enumerate(privacy.MARKERS[:3])
    ]
    cases += [
        pytest.param(privacy.test_a_marked_first_message_hides_a_session_without_a_title, m)
        for m in privacy.MARKERS[:2]
    ]
    cases += [
        pytest.param(test, None, id=test.__name__)
        for test in (
            privacy.test_a_marker_in_a_later_message_or_without_brackets_hides_nothing,
            privacy.test_a_private_title_replaced_within_one_read_keeps_the_session_private,
            privacy.test_a_claude_private_title_replaced_within_one_read_keeps_the_session_private,
            privacy.test_a_rewritten_log_without_the_marker_does_not_unhide_the_session,
            privacy.test_a_session_turns_private_in_a_later_incremental_read,
            privacy.test_forget_removes_a_private_session_and_nothing_unmarks_one,
            privacy.test_a_child_of_a_visible_session_stays_visible,
            privacy.test_private_sessions_are_never_embedded,
        )
    ]
    return cases


@pytest.mark.parametrize(("case", "marker"), _privacy_cases())
def test_private_sessions_stay_private_in_this_mode(
    case: Callable[..., None],
    marker: str | None,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The privacy suite's cases, run again with `keepText = false`."""
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "false")
    if marker is None:
        case(isolated_home)
    else:
        case(isolated_home, marker)
    with Huiyi() as hy:
        assert not hy.keeps_text  # the case really ran in this mode


def test_a_hook_recalls_through_the_log_and_leaves_no_text_behind(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_SERVICE", "off")
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "false")
    project = isolated_home / "shop"
    (project / ".git").mkdir(parents=True)
    hooks.earlier_session(isolated_home, project)
    payload = hooks.claude_input(project, prompt="DJYHFS kumquat migration")
    text = hooks.context(hooks.hook("UserPromptSubmit", payload), "UserPromptSubmit")
    assert "why did the kumquat migration fail?" in text
    with Huiyi() as hy:
        assert not hy.keeps_text
    said = ("why did the kumquat migration fail", "hit a lock timeout")
    for path, data in _bytes_under(isolated_home / ".huiyi"):
        assert not [s for s in said if s.encode() in data], path.name


def test_huiyi_eval_ranks_the_golden_set_alike_in_both_modes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    golden = Path(__file__).parent / "golden" / "huiyi-golden.json"
    rankings = {}
    for keep in ("true", "false"):
        monkeypatch.setenv("HUIYI_KEEP_TEXT", keep)
        args = ["eval", "golden", str(golden), "--json", "--embedder", "fake"]
        result = CliRunner().invoke(main, [*args, "--limit-queries", "24"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        for metrics in report["metrics"].values():
            metrics.pop("latency_ms_p50"), metrics.pop("latency_ms_p95")
        rankings[keep] = (report["metrics"], report["queries"])
    assert rankings["true"] == rankings["false"]


def test_a_log_changed_since_it_was_indexed_shows_nothing_of_what_changed(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(isolated_home)
    _index(monkeypatch, keep=False)
    path.write_text(path.read_text(encoding="utf-8").replace(CHINESE, "别的内容"), "utf-8")
    with Huiyi() as hy:
        found = hy.search("鸬鹚数据迁移", workspace=CWD, abstain=False)
        assert all("鸬鹚" not in h.snippet and "别的" not in h.snippet for h in found.hits)
        session = hy.search("zebrafinch", workspace=CWD).hits[0].session_id
        texts = [e.text for e in hy.read(session)]
        assert ENGLISH in " ".join(texts)  # the records that did not change are still shown
        assert not [t for t in texts if "鸬鹚" in t or "别的内容" in t]
        assert hy.doctor()["no_copy"]["gone"] == 1


def _whole_log_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Count the whole-log reads of the read-through (the fallback when a position fails)."""
    reads: list[Path] = []
    whole = readthrough.read_texts

    def counted(reader: Reader, path: Path) -> dict[bytes, str]:
        reads.append(path)
        return whole(reader, path)

    monkeypatch.setattr(readthrough, "read_texts", counted)
    return reads


def test_a_located_text_is_read_from_its_record_alone_in_every_log_shape(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(isolated_home)
    dsh_cwd = "/home/ana/dsh"
    batches = [
        [dsh.user(1, "the heron sync runs nightly"), dsh.assistant(2, "鹭鸟同步每晚运行")],
        [dsh.user(3, "move the heron sync to noon"), dsh.assistant(4, "已改到中午")],
    ]
    dsh.write_session(isolated_home / ".dsh", dsh_cwd, batches, session_id="dsh-zstd")
    dsh.write_session(
        isolated_home / ".dsh", dsh_cwd + "2", batches, session_id="dsh-plain", compress=False
    )
    _index(monkeypatch, keep=False)
    reads = _whole_log_reads(monkeypatch)
    with Huiyi() as hy:
        for session, wanted in (
            ("dsh-zstd", ["the heron sync runs nightly", "鹭鸟同步每晚运行", "已改到中午"]),
            ("dsh-plain", ["move the heron sync to noon", "已改到中午"]),
        ):
            texts = [e.text for e in hy.read(session)]
            assert all(text in texts for text in wanted), texts
        hit = hy.search("鸬鹚数据迁移", workspace=CWD).hits[0]
        assert CHINESE in hit.snippet
        assert "heron" in hy.search("heron sync noon", workspace=dsh_cwd).hits[0].snippet
    assert reads == []  # every text came from its own record, no log was read whole


def test_a_log_that_grew_is_still_read_at_its_records(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(isolated_home)
    _index(monkeypatch, keep=False)
    with path.open("a", encoding="utf-8") as log:
        log.write(json.dumps(user("one more thing about the cormorant")) + "\n")
    reads = _whole_log_reads(monkeypatch)
    with Huiyi() as hy:
        hit = hy.search("鸬鹚数据迁移", workspace=CWD).hits[0]
        assert CHINESE in hit.snippet
        assert ENGLISH in " ".join(e.text for e in hy.read(hit.session_id))
    assert reads == []


def test_a_record_moved_by_an_edit_is_found_by_its_digest_in_the_whole_log(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(isolated_home)
    _index(monkeypatch, keep=False)
    # a longer first line moves every record after it; their texts are unchanged
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0] = lines[0].replace("orders table", "orders table and the invoices table")
    path.write_text("".join(lines), encoding="utf-8")
    reads = _whole_log_reads(monkeypatch)
    with Huiyi() as hy:
        found = hy.search("鸬鹚数据迁移", workspace=CWD)
        assert found.hits and CHINESE in found.hits[0].snippet
        texts = " ".join(e.text for e in hy.read(found.hits[0].session_id))
        assert CHINESE in texts and "invoices" not in texts  # the changed record shows nothing
    assert reads  # the position no longer matched: the log was read whole


def test_a_gone_event_is_neither_pushed_to_the_team_nor_embedded(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(isolated_home)
    monkeypatch.setenv("HUIYI_KEEP_TEXT", "false")
    with Huiyi() as hy:
        hy.index()
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:2]), encoding="utf-8")  # the last two records are gone
    with Huiyi() as hy:
        hy.embed()
        conn = hy.conn
        sid, session = conn.execute("SELECT sid, id FROM sessions WHERE cwd = ?", (CWD,)).fetchone()
        pushed = [
            event
            for payload, _, _ in export.team_pushes(conn, [CWD], {}, lambda ws: "api")
            for pushed_session in payload["sessions"]  # type: ignore[attr-defined]
            for event in pushed_session["events"]
        ]
        assert pushed and all(event["text"] for event in pushed)
        assert [e["seq"] for e in pushed] == [e.seq for e in hy.read(session)]
        embedded = conn.execute(
            "SELECT count(*) FROM vectors v JOIN events e ON e.id = v.event_id WHERE e.sid = ?",
            (sid,),
        ).fetchone()[0]
        assert embedded == len(hy.read(session)) == 2


def test_a_full_text_row_left_by_a_changed_log_never_shows_another_events_text(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the contentless full-text rows of a changed record cannot be removed (their words are
    # not known any more); the events that come after must not inherit them
    path = write_transcript(
        isolated_home / ".claude",
        CWD,
        [user(f"we planned the {ENGLISH}"), assistant(f"{CHINESE}放在周五")],
    )
    _index(monkeypatch, keep=False)
    path.write_text("", encoding="utf-8")  # the log shrank: what it held is gone
    with Huiyi() as hy:
        hy.index()
    write_transcript(
        isolated_home / ".claude",
        CWD,
        [user("what colour should the login button be"), assistant("blue, like the logo")],
        session_id="0a0b0c0d-1111-4222-8333-444455556666",
    )
    with Huiyi() as hy:
        hy.index()
        for query in ("zebrafinch migration backfill", "鸬鹚数据迁移"):
            found = hy.search(query, workspace=CWD, abstain=False)
            assert [h.snippet for h in found.hits] == []
        assert "login" in hy.search("login button colour", workspace=CWD).hits[0].snippet
