"""FTS5 match expressions, as the search layers write them, compiled for PostgreSQL.

The store interface's full-text lookups take FTS5 match expressions (`store.index`). huiyi
writes a small subset of that language, and this module reads exactly that subset:

    expr   := term (("AND" | "OR") term)*        AND binds tighter than OR, as in FTS5
    term   := "(" expr ")" | [column ":"] phrase ["*"]
    phrase := '"' characters ('""' is one quote) '"'

A phrase's text is split into tokens as its table's tokenizer splits it (`unicode61` words for
the full-text columns `body`/`whole`, the three characters themselves for the trigram table).
The workspace is never a lexeme here: `scope:"w..."` (full text) and the private-use trigram
of a workspace (fuzzy) become a condition on `events.workspace`, which must be one of the
conjuncts of the whole expression (huiyi never puts one under an OR). Anything else is a
`MatchError`: a layer that built an expression this store cannot read drops out.
"""

from __future__ import annotations

from dataclasses import dataclass

from huiyi.store.pg.lexemes import quote, split


class MatchError(ValueError):
    """An expression outside the subset this module reads."""


@dataclass(frozen=True, slots=True)
class Phrase:
    column: str | None  # 'body', 'whole', 'scope', or None (the trigram table)
    text: str
    prefix: bool = False

    def tokens(self) -> list[str]:
        return [self.text] if self.column is None else split(self.text)


@dataclass(frozen=True, slots=True)
class Op:
    op: str  # 'AND' | 'OR'
    parts: tuple[Node, ...]


Node = Phrase | Op


def parse(text: str) -> Node:
    """The expression tree of an FTS5 match expression in huiyi's subset."""
    reader = _Reader(text)
    node = reader.expr()
    reader.space()
    if reader.at < len(text):
        raise MatchError(f"unexpected {text[reader.at :][:20]!r} in a match expression")
    return node


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def space(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def word(self, word: str) -> bool:
        self.space()
        end = self.at + len(word)
        if self.text[self.at : end] == word and (end == len(self.text) or self.text[end] in ' ("'):
            self.at = end
            return True
        return False

    def expr(self) -> Node:
        ors = [self.conj()]
        while self.word("OR"):
            ors.append(self.conj())
        return ors[0] if len(ors) == 1 else Op("OR", tuple(ors))

    def conj(self) -> Node:
        ands = [self.term()]
        while self.word("AND"):
            ands.append(self.term())
        return ands[0] if len(ands) == 1 else Op("AND", tuple(ands))

    def term(self) -> Node:
        self.space()
        if self.text.startswith("(", self.at):
            self.at += 1
            node = self.expr()
            self.space()
            if not self.text.startswith(")", self.at):
                raise MatchError("unclosed parenthesis in a match expression")
            self.at += 1
            return node
        column = None
        for name in ("body", "whole", "scope"):
            if self.text.startswith(name + ":", self.at):
                column, self.at = name, self.at + len(name) + 1
                break
        if not self.text.startswith('"', self.at):
            raise MatchError(f"expected a quoted phrase at {self.text[self.at :][:20]!r}")
        self.at += 1
        chars: list[str] = []
        while True:
            end = self.text.find('"', self.at)
            if end < 0:
                raise MatchError("unclosed quote in a match expression")
            chars.append(self.text[self.at : end])
            self.at = end + 1
            if self.text.startswith('"', self.at):  # '""': one quote inside the phrase
                chars.append('"')
                self.at += 1
                continue
            break
        prefix = self.text.startswith("*", self.at)
        if prefix:
            self.at += 1
        return Phrase(column, "".join(chars), prefix)


@dataclass(frozen=True, slots=True)
class Compiled:
    """What PostgreSQL runs for one expression: a tsquery (or the trigrams every row must
    hold), the workspace scope tokens it was narrowed by, and its phrases in FTS5's order."""

    tsquery: str | None
    scopes: tuple[str, ...]
    phrases: tuple[Phrase, ...]
    #: the document-frequency keys (`b:` body, `w:` compound) of an expression that is one
    #: word or an OR of words, each one token and no prefix: the rows holding any of them are
    #: the rows it matches (what `store.pg.lists` answers); None for any other shape
    terms: tuple[str, ...] | None = None


def _weight(column: str | None) -> str:
    return {"body": "D", "whole": "A"}.get(column or "", "")


def _tsquery(node: Node) -> str:
    if isinstance(node, Phrase):
        tokens = node.tokens()
        if not tokens:
            raise MatchError(f"a phrase with no words: {node.text!r}")
        weight = _weight(node.column)
        parts = [f"{quote(t)}:{weight}" if weight else quote(t) for t in tokens]
        if node.prefix:
            last = tokens[-1]
            parts[-1] = f"{quote(last)}:*{weight}"
        return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"
    joiner = " & " if node.op == "AND" else " | "
    return "(" + joiner.join(_tsquery(part) for part in node.parts) + ")"


def _split_scopes(node: Node, is_scope: _ScopeTest) -> tuple[Node | None, list[str]]:
    """The expression without its workspace conjuncts, and those workspaces' tokens."""
    if isinstance(node, Phrase):
        return (None, [node.text]) if is_scope(node) else (node, [])
    if node.op == "OR":
        if any(_has_scope(part, is_scope) for part in node.parts):
            raise MatchError("a workspace under OR in a match expression")
        return node, []
    kept: list[Node] = []
    scopes: list[str] = []
    for part in node.parts:
        rest, found = _split_scopes(part, is_scope)
        scopes.extend(found)
        if rest is not None:
            kept.append(rest)
    if not kept:
        return None, scopes
    return (kept[0] if len(kept) == 1 else Op("AND", tuple(kept))), scopes


def _has_scope(node: Node, is_scope: _ScopeTest) -> bool:
    if isinstance(node, Phrase):
        return is_scope(node)
    return any(_has_scope(part, is_scope) for part in node.parts)


def _phrases(node: Node) -> list[Phrase]:
    if isinstance(node, Phrase):
        return [node]
    return [phrase for part in node.parts for phrase in _phrases(part)]


class _ScopeTest:
    def __init__(self, fuzzy_scopes: frozenset[str]) -> None:
        self.fuzzy_scopes = fuzzy_scopes

    def __call__(self, phrase: Phrase) -> bool:
        return phrase.column == "scope" or (
            phrase.column is None and phrase.text in self.fuzzy_scopes
        )


def compile_full_text(text: str) -> Compiled:
    """A full-text expression (`body`, `whole`, `scope` phrases)."""
    node = parse(text)
    rest, scopes = _split_scopes(node, _ScopeTest(frozenset()))
    phrases = tuple(p for p in _phrases(node) if p.column != "scope")
    if any(p.column is None for p in phrases):
        raise MatchError("a full-text phrase without its column")
    tsquery = _tsquery(rest) if rest is not None else None
    return Compiled(tsquery, tuple(scopes), phrases, _terms(rest) if rest is not None else None)


def _terms(node: Node) -> tuple[str, ...] | None:
    """`Compiled.terms` of an expression without its workspace conjuncts."""
    if isinstance(node, Phrase):
        tokens = node.tokens()
        if node.prefix or len(tokens) != 1 or node.column not in ("body", "whole"):
            return None
        return (("w:" if node.column == "whole" else "b:") + tokens[0],)
    if node.op != "OR":
        return None
    found: list[str] = []
    for part in node.parts:
        terms = _terms(part)
        if terms is None:
            return None
        found.extend(t for t in terms if t not in found)
    return tuple(found)


def compile_trigrams(text: str, fuzzy_scopes: frozenset[str]) -> tuple[list[str], list[str]]:
    """A trigram-table expression: the trigrams every matching row holds (an AND of plain
    phrases, as the fuzzy layer writes them), and the workspace trigrams among them."""
    node = parse(text)
    rest, scopes = _split_scopes(node, _ScopeTest(fuzzy_scopes))
    grams: list[str] = []
    for phrase in _phrases(rest) if rest is not None else []:
        if phrase.column is not None or phrase.prefix:
            raise MatchError("the trigram table has no columns and no prefixes")
        if len(phrase.text) != 3:
            raise MatchError(f"not one trigram: {phrase.text!r}")
        grams.append(phrase.text)
    if rest is not None and isinstance(rest, Op) and rest.op == "OR":
        raise MatchError("an OR of trigrams (the fuzzy layer asks for one at a time)")
    return grams, scopes
