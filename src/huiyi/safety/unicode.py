"""Unicode the safety exit has to see through: invisible characters and look-alike letters.

Two tricks defeat a check that reads text the way Python compares it:

* **Invisible characters**: zero-width spaces and joiners, bidirectional controls, the word
  joiner, the soft hyphen, Hangul fillers, variation selectors 17-256 and the Unicode *tag*
  characters (U+E0000-U+E007F, which spell out ASCII that a reader never sees but a model
  does). Put inside a word they hide it from a pattern (`ig\\u200bnore`, `ghp_ab\\u200bcd…`);
  on their own they carry a hidden message. `strip_invisible` removes them; every text that
  leaves through the redactor or the envelope passes it.
* **Look-alike letters** from other scripts: Cyrillic `і` and `о`, Greek `Α`, small capitals
  `ᴅ`, Cherokee `Ꭰ` … read as Latin letters but are different code points, and NFKC does not
  fold them. `LOOKALIKES` maps the ones that pass for Latin letters (a small table, kept by
  hand: the letters of the envelope's marker and of the threat scan's attack words), and
  `fold_char` applies it together with NFKD, dropping combining marks (`İ`, `H̃`) and case.

Variation selectors 1-16 (U+FE00-U+FE0F) are kept: emoji need them.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["INVISIBLE", "LOOKALIKES", "fold_char", "fold_text", "strip_invisible"]

#: Every format character (category Cf, Unicode 14) plus the invisible letters and marks that
#: are used to hide text: Hangul fillers, the combining grapheme joiner, variation selectors
#: 17-256.
INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)

#: Letters of other scripts (and Latin small capitals) that pass for a Latin letter.
_LOOKALIKE_TABLE = {
    "a": "аАαΑɑᴀꓮᎪ",
    "b": "вВΒʙ",
    "c": "сСϲϹᴄ",
    "d": "ԁꓓᎠᴅ",
    "e": "еЕёЁεΕҽᴇꓰᎬ℮",
    "g": "ɡɢ",
    "h": "һҺнНΗʜꓧᎻհ",
    "i": "іІїЇιΙıɩɪӏӀꓲᎥ",
    "j": "јЈϳᴊᎫ",
    "k": "кКκΚᴋᏦ",
    "l": "ʟᏞ",
    "m": "мМΜᴍᎷ",
    "n": "ոΝηɴꓠ",
    "o": "оОοΟօᴏ",
    "p": "рРρΡᴘ",
    "q": "ԛԚզ",
    "s": "ѕЅꜱᏚ",
    "t": "тТτΤᴛꓔᎢ",
    "u": "սυᴜꓴ",
    "v": "νᴠᏙ",
    "w": "ԝԜᴡᏔ",
    "x": "хХχΧ",
    "y": "уУүҮΥʏꓬ",
    "z": "Ζᴢ",
}
LOOKALIKES: dict[str, str] = {
    char: latin for latin, chars in _LOOKALIKE_TABLE.items() for char in chars
}


def strip_invisible(text: str) -> str:
    """`text` without invisible characters (see `INVISIBLE`)."""
    return text if text.isascii() else INVISIBLE.sub("", text)


@functools.lru_cache(maxsize=4096)
def fold_char(ch: str) -> str:
    """What one character reads as: look-alikes mapped to Latin, compatibility forms and case
    folded (NFKD, `casefold`), combining marks and invisible characters dropped. May be
    empty (a mark, a zero-width space) or longer than one character (`ﬁ` -> `fi`)."""
    if ch.isascii():
        return ch.lower()
    if ch in LOOKALIKES:
        return LOOKALIKES[ch]
    if INVISIBLE.match(ch):
        return ""
    out = []
    for part in unicodedata.normalize("NFKD", ch).casefold():
        if unicodedata.combining(part) or unicodedata.category(part) in ("Mn", "Me"):
            continue
        out.append(LOOKALIKES.get(part, part))
    return unicodedata.normalize("NFC", "".join(out))


class _FoldTable(dict[int, str]):
    """A `str.translate` table that folds each code point the first time it is seen."""

    def __missing__(self, code: int) -> str:
        folded = fold_char(chr(code))
        if len(self) < 65_536:  # text made of ever new code points cannot grow it for good
            self[code] = folded
        return folded


_FOLD_TABLE = _FoldTable()


def fold_text(text: str) -> str:
    """`fold_char` over the whole text (fast: `str.translate` with a self-filling table)."""
    if text.isascii():
        return text.lower()
    return text.translate(_FOLD_TABLE)
