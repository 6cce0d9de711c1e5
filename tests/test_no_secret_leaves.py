"""A secret of any known family, anywhere in a session, never leaves through any exit:
the four recall tools and every CLI command that prints history."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.recall.scope import CallerContext
from tests.builders import dsh
from tests.test_redact import FAMILIES

SESSION = "session-5ec2e700-1111-4222-8333-444455556666"
PLACES = ("user", "title", "tool", "assistant", "compacted")
_filler = st.text(alphabet=st.sampled_from("abc 数据库回滚 \n，。xyz"), max_size=40)


def write_world(root: Path, secret: str, place: str, before: str, after: str) -> str:
    cwd = root / "repo"
    (cwd / ".git").mkdir(parents=True)
    text = f"{before} {secret} {after} marker"
    lines = [
        dsh.user(1, text if place in ("user", "compacted") else "marker question"),
        dsh.title(2, text if place == "title" else "marker title"),
        dsh.assistant(3, calls=[("c1", "bash", json.dumps({"command": "env"}))]),
        dsh.tool_result(4, "c1", text if place == "tool" else "ok"),
        dsh.assistant(5, text if place == "assistant" else "marker answer"),
    ]
    batches = [lines]
    if place == "compacted":
        batches.append(dsh.compaction(6, "summary marker", start=1, end=5))
    dsh.write_session(root / ".dsh", str(cwd), batches, session_id=SESSION)
    return str(cwd)


def every_output(cwd: str, monkeypatch: pytest.MonkeyPatch) -> str:
    outputs: list[str] = []
    with Huiyi() as hy:
        hy.index()
        for ctx in (CallerContext(cwd, None), CallerContext(cwd, SESSION)):
            recall = hy.recall(ctx)
            outputs.append(recall.history("marker").text)
            outputs.append(recall.session_list().text)
            outputs.append(recall.session_read(SESSION, include_tools=True).text)
            outputs.append(recall.session_read(SESSION, from_seq=0, include_tools=True).text)
            outputs.append(recall.expand(seq=3, session_id=SESSION, before=5, after=5).text)
        outputs.append(hy.recall(CallerContext(cwd, SESSION)).history(None).text)
        outputs.append(hy.recall(CallerContext(cwd, SESSION)).expand().text)
    monkeypatch.chdir(cwd)
    runner = CliRunner()
    for args in (
        ["search", "marker"],
        ["search", "marker", "--json"],
        ["search", "marker", "--all"],
        ["sessions", "--all"],
        ["sessions", "--json"],
        ["show", SESSION],
        ["show", SESSION, "--json"],
        ["recall", "marker"],
        ["recall", "--session", SESSION],
    ):
        result = runner.invoke(main, args, catch_exceptions=False)
        outputs.append(result.output)
    return "\n".join(outputs)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    family=st.sampled_from(FAMILIES),
    place=st.sampled_from(PLACES),
    before=_filler,
    after=_filler,
)
def test_a_secret_anywhere_in_a_session_never_reaches_any_output(
    family: tuple[str, str],
    place: str,
    before: str,
    after: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, secret = family
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        monkeypatch.setenv("HUIYI_HOME", str(root / ".huiyi"))
        monkeypatch.setenv("DSH_HOME", str(root / ".dsh"))
        cwd = write_world(root, secret, place, before, after)
        everything = every_output(cwd, monkeypatch)
    assert "marker" in everything  # the outputs really showed the session
    assert secret not in everything
    # nor a long piece of it (a snippet cut must not leave half a secret behind)
    core = secret.split("-")[-1].split("_")[-1]
    if len(core) >= 16:
        assert core[4:16] not in everything
