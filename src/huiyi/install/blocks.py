"""A marked block in a text file: huiyi's lines between a begin and an end marker line, and
nothing of huiyi's outside them.

Installers (TOML and YAML comments) and `huiyi agents-md sync` (HTML comments in Markdown)
keep what they write inside such a block, so a re-run replaces it in place, `--uninstall`
removes exactly it, and every byte around it stays the person's. Markers count only as whole
lines (surrounding spaces allowed); line endings follow the file (CRLF stays CRLF).

A file whose markers are damaged (one without the other, two of a kind, the end before the
begin, a marker inside a line of other text) is refused with a `UsageError` naming the line:
guessing which lines are ours could delete the person's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from huiyi.errors import UsageError

__all__ = ["Block"]


@dataclass(frozen=True, slots=True)
class Block:
    """The markers of one kind of block."""

    begin: str
    end: str

    def _lines(self, text: str, path: Path) -> tuple[int, int] | None:
        """Character offsets (start of the begin line, end of the end line incl. its newline)."""
        begins: list[tuple[int, int]] = []
        ends: list[tuple[int, int]] = []
        offset = 0
        for number, line in enumerate(text.splitlines(keepends=True), 1):
            bare = line.strip()
            for marker, found in ((self.begin, begins), (self.end, ends)):
                if marker in line:
                    if bare != marker:
                        raise UsageError(
                            f"{path}, line {number}: huiyi's marker `{marker}` shares its line "
                            "with other text; put it back on a line of its own (or remove the "
                            "block by hand). Nothing was written."
                        )
                    found.append((number, offset if marker == self.begin else offset + len(line)))
            offset += len(line)
        if not begins and not ends:
            return None
        if len(begins) != 1 or len(ends) != 1 or begins[0][0] >= ends[0][0]:
            where = ", ".join(f"begin at line {n}" for n, _ in begins)
            where = ", ".join(filter(None, [where, *(f"end at line {n}" for n, _ in ends)]))
            raise UsageError(
                f"{path}: huiyi's block markers are damaged ({where}); a block needs exactly "
                f"one `{self.begin}` line followed by one `{self.end}` line. Mend or remove "
                "them by hand. Nothing was written."
            )
        return begins[0][1], ends[0][1]

    def find(self, text: str, path: Path) -> str | None:
        """The block's text, markers included; None when the file has none."""
        span = self._lines(text, path)
        return None if span is None else text[span[0] : span[1]]

    def put(self, text: str, body: str, path: Path) -> str:
        """`text` with the block holding `body` (lines joined by "\\n"): in place of the old
        block, else at the end of the file."""
        newline = "\r\n" if "\r\n" in text else "\n"
        lines = [self.begin, *body.split("\n"), self.end] if body else [self.begin, self.end]
        block = newline.join(line.rstrip("\r") for line in lines) + newline
        span = self._lines(text, path)
        if span is None:
            if text and not text.endswith("\n"):
                text += newline
            return text + block
        return text[: span[0]] + block + text[span[1] :]

    def remove(self, text: str, path: Path) -> str:
        """`text` without the block (unchanged when there is none)."""
        span = self._lines(text, path)
        return text if span is None else text[: span[0]] + text[span[1] :]
