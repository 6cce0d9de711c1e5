"""Redaction measured on a generated corpus of secrets and of ordinary text, by half.

`tests.corpora.secrets` plants one fresh synthetic secret per case the way sessions hold them,
family by family (command-line flags, CJK assignments, XML and Markdown tables, URL passwords,
config files, vendor tokens, hex and base64 bodies, and the named families in disguise), and
writes ordinary code, logs and config that hold none. The secrets are split by a hash of each
case into a tuning half and a held half. The figures are printed (`pytest -s`) and stated in
docs/benchmarks.md; the tuning half must meet the targets.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from huiyi.safety.redact import redact
from tests.corpora import HALVES, split
from tests.corpora.secrets import Case, cases, leaked, ordinary

ROOT = Path(__file__).resolve().parent.parent
LEAK_TARGET = 0.02
FALSE_POSITIVE_TARGET = 0.01


def halves() -> dict[str, list[Case]]:
    return split(cases(), lambda c: c.text)


def leaks(part: list[Case]) -> list[Case]:
    return [c for c in part if leaked(c, redact(c.text).text)]


def test_the_corpora_are_big_enough() -> None:
    assert len(cases()) >= 200
    assert len(ordinary()) >= 150
    for name, part in halves().items():
        assert len(part) >= 100, name


@pytest.mark.parametrize("name", HALVES)
def test_each_half_is_measured(name: str) -> None:
    part = halves()[name]
    bad = leaks(part)
    named = [c for c in bad if c.family.startswith("disguise")]
    print(f"\n{name}: {len(bad)} of {len(part)} secrets leak ({len(named)} of a named family)")
    if name == "tune":
        assert len(bad) / len(part) <= LEAK_TARGET, [c.text for c in bad]
        assert named == []


def test_the_judge_is_not_vacuous() -> None:
    # every planted secret is readable in its own text
    assert [c for c in cases() if not leaked(c, c.text)] == []


def test_ordinary_text_is_left_alone() -> None:
    texts = ordinary()
    masked = [t for t in texts if redact(t).text != t]
    print(f"\nordinary: {len(masked)} of {len(texts)} texts masked")
    assert len(masked) / len(texts) <= FALSE_POSITIVE_TARGET, masked


def test_the_readme_states_the_figures() -> None:
    text = re.sub(r"\s+", " ", (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    for name, part in halves().items():
        claim = f"{len(leaks(part))} of {len(part)} generated secrets ({name} half)"
        assert claim in text, f"docs/benchmarks.md should say {claim!r}"
    texts = ordinary()
    masked = sum(redact(t).text != t for t in texts)
    claim = f"{masked} of {len(texts)} generated ordinary texts"
    assert claim in text, f"docs/benchmarks.md should say {claim!r}"
