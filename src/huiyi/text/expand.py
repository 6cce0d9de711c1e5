"""Query expansion across Chinese and English for common technical terms.

People write about the same work in both languages: a session says `回滚 migration 0042` and
the question a week later is "how did we roll back the migration". Neither the lexical nor the
fuzzy layer can connect `回滚` and `rollback`, and the small multilingual model does it only
loosely. A small curated table (`terms.tsv` next to this module: the words of software work,
no project names) gives each term its equivalents in the other language; `expansion` returns
the ones a query lacks, which the search runs as an extra lexical ranking fused at a lower
weight than the query's own words (`search.fusion.WEIGHTS["expanded"]`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

__all__ = ["TERMS_FILE", "enclosing", "equivalents", "expansion", "parse", "table"]

#: the package file holding the table: `中文|别名<TAB>english|alias` per line, `#` comments
TERMS_FILE = "terms.tsv"


def parse(text: str) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """(Chinese forms, English forms) of every term of a table in `TERMS_FILE`'s format; a
    line that is not `中文<TAB>english` is a ValueError naming it."""
    rows: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        chinese, tab, english = line.partition("\t")
        zh = tuple(w.strip() for w in chinese.split("|") if w.strip())
        en = tuple(_fold(w.strip()) for w in english.split("|") if w.strip())
        if not tab or not zh or not en:
            raise ValueError(f"{TERMS_FILE} line {number}: expected 中文<TAB>english, got {line!r}")
        rows.append((zh, en))
    return tuple(rows)


@cache
def table() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """The package's table (`TERMS_FILE`), read once per process."""
    return parse(Path(__file__).with_name(TERMS_FILE).read_text(encoding="utf-8"))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


#: a term inside `latest` or inside an identifier (`test_env_beats_yaml`, `--create-db`,
#: `pkg.index`) is not that term; one ending a sentence (`release.`) is
_BEFORE = r"(?<![a-z0-9_])(?<![a-z0-9][./-])"
_AFTER = r"(?![a-z0-9_])(?![./-][a-z0-9])"


def _holds_english(folded: str, phrase: str) -> bool:
    """Whether `phrase` occurs in `folded` as whole words, not inside a word or identifier.
    Most of the table's phrases are not in a query at all: the substring test spares a fresh
    process compiling a pattern for each of them (slow for the whole table)."""
    return (
        phrase in folded and re.search(f"{_BEFORE}{re.escape(phrase)}{_AFTER}", folded) is not None
    )


def expansion(query: str) -> str:
    """The other language's forms of every table term the query holds, that the query does
    not already hold, joined by spaces ("" when none)."""
    folded = _fold(query)
    if not folded.strip():
        return ""
    out: list[str] = []
    for zh, en in table():
        if any(form in folded for form in zh):
            out.extend(e for e in en if not _holds_english(folded, e))
        elif any(_holds_english(folded, form) for form in en):
            out.extend(z for z in zh if z not in folded)
    return " ".join(dict.fromkeys(out))


def equivalents(word: str) -> list[str]:
    """The other language's forms of `word` when it is a form of a table term (else none)."""
    folded = _fold(word).strip()
    out: list[str] = []
    for zh, en in table():
        if folded in zh:
            out.extend(en)
        elif folded in en:
            out.extend(zh)
    return list(dict.fromkeys(out))


def enclosing(query: str, word: str) -> list[str]:
    """The other language's forms of every table term the query holds that holds `word` as a
    part (`磁盘` of a query's `磁盘满`: `disk full`, `no space left`; `disk` of `disk full`):
    a word cut out of a longer term is used when the term is."""
    folded = _fold(query)
    part = _fold(word).strip()
    if not part:
        return []
    out: list[str] = []
    for zh, en in table():
        if any(part in form and form != part and form in folded for form in zh):
            out.extend(en)
        elif any(
            part in form.split() and form != part and _holds_english(folded, form) for form in en
        ):
            out.extend(zh)
    return list(dict.fromkeys(out))
