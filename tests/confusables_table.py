"""Build `huiyi.safety.confusables` from Unicode's confusables data (TR39), for its test.

    python -m tests.confusables_table > src/huiyi/safety/confusables.py

The data comes from `confusable_homoglyphs` (a development dependency), which ships TR39's
`confusables.txt` as JSON. Kept: every single character outside ASCII that TR39 reads as one
ASCII letter or digit and that NFKC does not already fold to ASCII, plus the hand-kept
look-alikes TR39 leaves out (lower-case letters that pass for Latin in running text: Cyrillic
`н`, Greek `η`, `τ`, Coptic `ⲁ`, `ⲧ`; Latin small capitals). TR39 reads a capital that looks
like `I` as `l` (its skeletons compare shapes, not letters); a capital is read as `I` here,
since the words matched (`Ignore`, `HUIYI`) spell it so.
"""

from __future__ import annotations

import importlib.resources
import json
import string
import unicodedata

#: Look-alikes TR39 does not list (read in running text as the Latin letter of the key).
EXTRA = {
    "a": "ᴀⲁ", "b": "ʙв", "c": "ᴄ", "d": "ᴅ", "e": "ᴇⲉ", "g": "ɢ", "h": "нʜһⲏ", "i": "ɪⲓ", "j": "ᴊ",
    "k": "кᴋκ", "l": "ʟ", "m": "мᴍ", "n": "ηɴⲛ", "o": "ᴏ", "p": "ᴘ", "r": "ʀ", "s": "ꜱ",
    "t": "тτᴛⲧ", "u": "ᴜ", "v": "ᴠ", "w": "ᴡ", "y": "ʏⲩ", "z": "ᴢ",
}  # fmt: skip


def table() -> dict[str, str]:
    """Latin letter or digit -> the characters read as it, each string sorted."""
    data = json.loads(
        (importlib.resources.files("confusable_homoglyphs") / "confusables.json").read_text()
    )
    out: dict[str, set[str]] = {}
    for target in string.ascii_letters + string.digits:
        for entry in data.get(target, ()):
            char = entry["c"]
            if len(char) != 1 or char.isascii():
                continue
            if unicodedata.normalize("NFKC", char).isascii():
                continue  # NFKC folds it already
            read = "I" if target == "l" and unicodedata.category(char) == "Lu" else target
            out.setdefault(read, set()).add(char)
    taken = {c for chars in out.values() for c in chars}
    for target, chars in EXTRA.items():
        out.setdefault(target, set()).update(c for c in chars if c not in taken)
    return {target: "".join(sorted(chars)) for target, chars in sorted(out.items())}


def source() -> str:
    rows = "\n".join(f'    "{t}": "{c}",' for t, c in table().items())
    return f'''"""Characters of other scripts that read as a Latin letter or digit (generated).

Unicode's confusables (TR39, via `confusable_homoglyphs`) for every single character outside
ASCII that reads as one ASCII letter or digit and that NFKC does not fold already, plus
look-alikes TR39 leaves out (small capitals, Cyrillic `н`, Greek `η`). Made by
`python -m tests.confusables_table`; `tests/test_normalise.py` checks it against the data.
"""

from __future__ import annotations

__all__ = ["READS_AS"]

#: Latin letter or digit -> the characters read as it.
READS_AS: dict[str, str] = {{
{rows}
}}
'''


if __name__ == "__main__":
    print(source(), end="")
