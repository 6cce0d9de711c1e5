"""`/recall WORDS` typed by a person in the real Claude Code, as `huiyi install` leaves it.

The install writes `commands/recall.md` in the config dir; `claude -p "/recall ..."` expands it,
runs its shell block (which hands the typed words to `huiyi recall --stdin`) and sends the
result to the fake model with the prompt. The history is an earlier transcript of the same
project, indexed before the runs. The tests read what reached the model: the recalled words,
marked as recalled data, for a query history holds; an honest "nothing" for one it does not;
the usage line and no results for a bare `/recall`; and typed shell syntax stays words.
The hooks are off (`disableAllHooks`): only the command speaks here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.builders import claude as cc
from tests.clients.fake_model import Reply
from tests.clients.harness import Run, huiyi_command, huiyi_env, huiyi_install_argv, run_claude
from tests.clients.test_hooks_in_clients import sent
from tests.clients.test_real_clients import NOTICE

EARLIER = "部署脚本在 scripts/ship.sh，生产环境用 make ship ENV=production 触发。"
NO_HOOKS = ["--settings", json.dumps({"disableAllHooks": True})]


@dataclass
class Runs:
    found: Run
    missing: Run
    bare: Run
    shell: Run
    project: Path


def index_argv(home: Path) -> list[str]:
    """`huiyi index` with the settings the installed entries carry."""
    env = [f"{key}={value}" for key, value in huiyi_env(home).items()]
    return ["env", *env, *huiyi_command()[:-1], "index"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Runs:
    home = tmp_path_factory.mktemp("claude-commands")
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    earlier = [cc.user(EARLIER), cc.assistant("好的，记下了部署脚本的位置。")]
    cc.write_transcript(home / ".claude", str(project), earlier, session_id="earlier-1")
    setup = [huiyi_install_argv(home, "claude-code"), index_argv(home)]

    def slash(prompt: str) -> Run:
        run = run_claude(
            home,
            project,
            prompt,
            [Reply("ok")],
            register=False,
            setup=setup if not (home / ".claude" / "commands").exists() else [],
            extra_args=NO_HOOKS,
        )
        return run

    return Runs(
        found=slash("/recall 部署脚本"),
        missing=slash("/recall kubernetes helm chart"),
        bare=slash("/recall"),
        shell=slash("/recall 部署脚本 $(touch pwned) `touch pwned2`; touch pwned3"),
        project=project,
    )


def test_recall_brings_the_earlier_words_to_the_model_marked_as_data(runs: Runs) -> None:
    assert runs.found.returncode == 0, runs.found.describe()
    text = sent(runs.found.main_requests)
    assert "scripts/ship.sh" in text
    assert NOTICE in text  # recalled text arrives inside huiyi's data envelope


def test_recall_of_what_history_does_not_hold_says_nothing_was_found(runs: Runs) -> None:
    assert runs.missing.returncode == 0, runs.missing.describe()
    text = sent(runs.missing.main_requests)
    assert "scripts/ship.sh" not in text
    assert 'no match in this workspace\'s history for "kubernetes helm chart"' in text


def test_a_bare_recall_is_a_usage_error_not_a_result(runs: Runs) -> None:
    shown = runs.bare.stdout + sent(runs.bare.main_requests)
    assert "/recall needs some words" in shown
    assert "scripts/ship.sh" not in shown


def test_typed_shell_syntax_stays_words(runs: Runs) -> None:
    assert runs.shell.returncode == 0, runs.shell.describe()
    assert not any((runs.project / name).exists() for name in ("pwned", "pwned2", "pwned3"))
    assert "scripts/ship.sh" in sent(runs.shell.main_requests)
