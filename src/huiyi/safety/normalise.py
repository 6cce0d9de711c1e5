"""One normaliser before every safety matcher: text as a reader takes it, mapped back.

Redaction, the private-session markers, the envelope's marker neutralising and the memory
threat scan must all see through the same disguises, or a secret, a marker or an instruction
written one way is caught by one matcher and missed by the next. `view(text)` gives the text as
a reader (or a model) takes it in, with every position traceable to the original:

* **escapes decoded** where a key, a token or a marker could hide: HTML entities (`&#61;`,
  `&#x3c;`, `&lt;`, `&quot;`) and percent-escapes (`%3D`, `%E7%A7%81`), twice over (so `%253C`
  and `&amp;lt;` are read too);
* **joins**: the spaces and line breaks inside each match of `joins` are removed, where they
  split a token: `TOKEN_SPACES` (a no-break or narrow no-break space between two of a token's
  characters: letters, digits, `_`, `-`), `LINE_BREAKS` (a line break between two characters
  that are not spaces), or a caller's own (redaction joins a line break inside a vendor token);
* **invisible and format characters removed**: zero-width spaces and joiners, the soft hyphen,
  bidirectional controls, tag characters, variation selectors, Hangul fillers (`unicode`), and
  combining marks;
* **compatibility forms folded** (NFKC/NFKD): full-width `ｇｈｐ＿`, mathematical `𝐩𝐚𝐬𝐬`,
  circled `ⓟ`, squared `🄿`, superscripts, ligatures; and those NFKC leaves alone: parenthesised
  `⒫`, negative squared `🅿` and circled `🅟` letters, regional indicators `🇵`;
* **look-alikes folded**: letters and digits of other scripts that read as a Latin one (Cyrillic,
  Greek, Coptic, Cherokee, Lisu, Armenian, small capitals …; `confusables.READS_AS`, from
  Unicode's TR39 data);
* **case folded**, unless the caller keeps case (`casefold=False`: redaction does, because the
  shape of a token is in its case).

`View.span(start, end)` maps a match on `view.text` back to the characters of the original it
came from, so a mask covers exactly what the reader saw as the secret. ASCII text without `&`
or `%` is its own view (a C-speed check): ordinary text pays nothing, and text that folds
character for character (Chinese, most scripts) keeps its positions without a map.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable

from huiyi.safety.confusables import READS_AS
from huiyi.safety.unicode import INVISIBLE

__all__ = ["LINE_BREAKS", "TOKEN_SPACES", "View", "fold_char", "view"]

#: No-break spaces between two characters a token is made of (letters, digits, `_`, `-`):
#: inside a token they split it (`sk-ant-api03\u00a0-…`).
TOKEN_SPACES = re.compile(r"(?<=[\w\-])[\u00a0\u202f\u2007]++(?=[\w\-])")
#: Line breaks (and the indentation after one) between two characters that are not spaces.
LINE_BREAKS = re.compile(r"(?<=\S)(?:\r?\n[ \t]{0,8}+)++(?=\S)")

#: No-break spaces: kept through the fold so that `joins` can see them, then spaces.
_NO_BREAK = "\u00a0\u202f\u2007"
_NO_BREAK_AS_SPACE = {ord(c): " " for c in _NO_BREAK}
_ESCAPE = re.compile(
    r"&(?:#[0-9]{1,7}+|#[xX][0-9A-Fa-f]{1,6}+|[A-Za-z][A-Za-z0-9]{1,31}+);?"
    r"|(?:%[0-9A-Fa-f]{2})++"
)
_READS_AS = {char: latin for latin, chars in READS_AS.items() for char in chars}
#: Marks and format characters: removed (combining marks, variation selectors 1-16 as well).
_DROPPED = frozenset({"Mn", "Me", "Cf"})


def _letter_of(code: int) -> str | None:
    """Letters NFKC does not fold: parenthesised, negative squared and circled, regional
    indicators."""
    if 0x249C <= code <= 0x24B5:
        return chr(ord("a") + code - 0x249C)
    if 0x2474 <= code <= 0x2487:  # parenthesised numbers 1-20
        return str(code - 0x2473)
    for start in (0x1F170, 0x1F150, 0x1F1E6):
        if start <= code < start + 26:
            return chr(ord("A") + code - start)
    return None


@functools.lru_cache(maxsize=8192)
def fold_char(ch: str, casefold: bool = True) -> str:
    """What one character reads as (may be empty, or several characters)."""
    if ch.isascii():
        return ch.lower() if casefold else ch
    if INVISIBLE.match(ch) or "\ufe00" <= ch <= "\ufe0f":
        return ""
    if ch in _NO_BREAK:
        return ch  # kept until the joins are applied, then a space
    special = _letter_of(ord(ch))
    if special is not None:
        return special.lower() if casefold else special
    out: list[str] = []
    for part in unicodedata.normalize("NFKD", _READS_AS.get(ch, ch)):
        if unicodedata.category(part) in _DROPPED:
            continue
        out.append(_READS_AS.get(part, part))
    folded = unicodedata.normalize("NFC", "".join(out))
    if not casefold:
        return folded
    # a capital whose small letter is the look-alike (Coptic `Ⲏ`, whose `ⲏ` reads as `h`)
    return "".join(_READS_AS.get(c, c) for c in folded.casefold()).casefold()


class _FoldTable(dict[int, str]):
    """A `str.translate` table that folds each code point the first time it is seen."""

    def __init__(self, casefold: bool) -> None:
        super().__init__()
        self.casefold = casefold

    def __missing__(self, code: int) -> str:
        folded = fold_char(chr(code), self.casefold)
        if len(self) < 65_536:  # text made of ever new code points cannot grow it for good
            self[code] = folded
        return folded


_TABLES = {True: _FoldTable(True), False: _FoldTable(False)}


class View:
    """A text as the matchers read it, and the way back to the original.

    `starts[i]` and `ends[i]` are the span of the original that character `i` of `text` came
    from; both are None while positions carry over one to one.
    """

    __slots__ = ("ends", "source", "starts", "text")

    def __init__(
        self, source: str, text: str, starts: list[int] | None, ends: list[int] | None
    ) -> None:
        self.source = source
        self.text = text
        self.starts = starts
        self.ends = ends

    @property
    def same(self) -> bool:
        """The view is the original, character for character."""
        return self.starts is None and self.text == self.source

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original that `text[start:end]` came from."""
        if self.starts is None or self.ends is None:
            return start, end
        if start >= end:
            at = self.starts[start] if start < len(self.starts) else len(self.source)
            return at, at
        return self.starts[start], self.ends[end - 1]


def _rebuild(
    pieces: list[tuple[str, int, int, bool]], starts: list[int] | None, ends: list[int] | None
) -> tuple[str, list[int], list[int]]:
    """Join `pieces` (new text, old start, old end, verbatim) into a text and its map to the
    original, through the old map (`starts`/`ends`, None for identity)."""
    text: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    for piece, a, b, verbatim in pieces:
        text.append(piece)
        if verbatim:
            if starts is None or ends is None:
                new_starts.extend(range(a, b))
                new_ends.extend(range(a + 1, b + 1))
            else:
                new_starts.extend(starts[a:b])
                new_ends.extend(ends[a:b])
        elif piece:
            lo = a if starts is None else starts[a]
            hi = b if ends is None else ends[b - 1]
            new_starts.extend([lo] * len(piece))
            new_ends.extend([hi] * len(piece))
    return "".join(text), new_starts, new_ends


def _replace(
    text: str,
    pattern: re.Pattern[str],
    decode: Callable[[str], str],
    starts: list[int] | None,
    ends: list[int] | None,
) -> tuple[str, list[int] | None, list[int] | None]:
    """Each match of `pattern` replaced by `decode(match)` (unchanged when it returns the
    match), the map carried along."""
    pieces: list[tuple[str, int, int, bool]] = []
    done = 0
    for m in pattern.finditer(text):
        new = decode(m[0])
        if new == m[0]:
            continue
        pieces.append((text[done : m.start()], done, m.start(), True))
        pieces.append((new, m.start(), m.end(), False))
        done = m.end()
    if not pieces:
        return text, starts, ends
    pieces.append((text[done:], done, len(text), True))
    return _rebuild(pieces, starts, ends)


def _unescape(piece: str) -> str:
    if piece[0] == "&":
        return html.unescape(piece)
    try:
        return bytes.fromhex(piece.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return piece


_SEPARATORS = re.compile(r"[\s\u00a0\u202f\u2007]++")


def _unsplit(piece: str) -> str:
    """A match of `joins` without its spaces and line breaks."""
    return _SEPARATORS.sub("", piece)


def _fold(
    text: str, casefold: bool, starts: list[int] | None, ends: list[int] | None
) -> tuple[str, list[int] | None, list[int] | None]:
    if text.isascii():
        return (text.lower() if casefold else text), starts, ends
    table = _TABLES[casefold]
    if all(len(table[ord(ch)]) == 1 for ch in set(text)):
        return text.translate(table), starts, ends  # one for one: positions carry over
    pieces = [(table[ord(ch)], i, i + 1, False) for i, ch in enumerate(text)]
    return _rebuild(pieces, starts, ends)


def view(text: str, *, casefold: bool = True, joins: re.Pattern[str] | None = None) -> View:
    """`text` as the safety matchers read it (see the module docstring)."""
    if text.isascii() and "&" not in text and "%" not in text and joins is None:
        return View(text, text.lower() if casefold else text, None, None)
    out, starts, ends = text, None, None
    for _ in range(2):
        if "&" not in out and "%" not in out:
            break
        out, starts, ends = _replace(out, _ESCAPE, _unescape, starts, ends)
    out, starts, ends = _fold(out, casefold, starts, ends)
    if joins is not None:  # on folded text: invisible characters no longer stand between
        out, starts, ends = _replace(out, joins, _unsplit, starts, ends)
    if not out.isascii():
        out = out.translate(_NO_BREAK_AS_SPACE)
    return View(text, out, starts, ends)
