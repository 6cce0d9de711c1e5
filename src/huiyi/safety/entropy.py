"""Tell machine-made strings from words: the statistical net of `huiyi.safety.redact`.

Most secrets are caught there by shape (a vendor prefix, a `password=` key, a PEM block). The
rest have nothing telling about them but their look, and this module judges that look:
`LONG_RUN` finds the candidate runs in free text, `looks_secret` decides whether a run of
base64/hex-ish characters (also a URL path segment) is random enough to mask, and `tokenish`
is the weaker test for a value that already sits behind a telling word (`Bearer <value>`).
It is its own module because it is a different kind of rule from the pattern passes
(statistics, not shapes), tuned on its own against the false positives of coding sessions.

Why it is shaped this way:

* What is *not* a secret is ruled out first, by shape: UUIDs, hex runs of a common digest
  length (SHA-1/git, SHA-2) or labelled as one (`sha256:`, `commit `), checksums whatever
  their alphabet (`sha512-…` integrity strings, go.sum's `h1:…`), and digests or build hashes
  embedded in paths and identifiers (`.../snapshots/<sha>`, cargo's `serde-8d2a5b0f6c1e9f3a`),
  which are judged with the hash removed.
* Pure hex is judged by `_hex_secret` (digits and letters mixed, some entropy); everything
  else by `_randomish`, which looks for frequent switches between lower case, upper case and
  digits, and forgives long lower-case runs with vowels (words, snake_case, paths).
* Counting is done by C-level helpers (regex, `str.count`), so the cost stays linear in the
  length of a run; `tests/test_redact.py` times adversarial input.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter

__all__ = ["LONG_RUN", "looks_secret", "tokenish"]

#: Lengths of common hex digests (SHA-1/git, SHA-224, SHA-256, SHA-384, SHA-512): ids, not
#: secrets, and very common in coding sessions.
_DIGEST_LENGTHS = frozenset({40, 56, 64, 96, 128})
_HEX = re.compile(r"[0-9a-fA-F]++")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGEST_LABEL = re.compile(
    r"(?:sha(?:1|224|256|384|512)?|md5|blake2[bs]?|digest|commit|checksum)"
    r"[ \t]{0,4}[:=@]?[ \t]{0,4}$",
    re.IGNORECASE,
)
_PART_SPLIT = re.compile(r"[/_\-+~]")
#: a hex part of a path or identifier that has a digit: a build or cache hash
#: (`serde-8d2a5b0f6c1e9f3a`, `index.crates.io-6f17d22bba15001f`, a short git SHA)
_HASH_PART = re.compile(r"(?=[a-fA-F]{0,15}[0-9])[0-9a-fA-F]{7,16}+")
#: what marks the run after it as a checksum, whatever its alphabet: go.sum's `h1:`, npm's
#: `integrity`, Subresource Integrity's `sha512-`
_CHECKSUM_LABEL = re.compile(
    r"(?:\bh1:|\bintegrity[\"']?[ \t]{0,4}[:=]?[ \t]{0,4}[\"']?)$", re.IGNORECASE
)
_SRI = re.compile(r"(?:sha1|sha256|sha384|sha512)-[A-Za-z0-9+/]")

#: Candidates for the net in free text: runs of 32 or more base64/hex-ish characters, started
#: only where such a run starts, so no run is rescanned from every offset.
LONG_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-~])[A-Za-z0-9+/_\-~]{32,}+={0,3}+")


def _entropy(text: str) -> float:
    n = len(text)
    counts = (text.count(c) for c in set(text)) if n > 4096 else Counter(text).values()
    return -sum(c / n * math.log2(c / n) for c in counts)


_CASE_RUN = re.compile(r"[a-z]++|[A-Z]++|[0-9]++")
_WORD_RUN = re.compile(r"[a-z]{3,}+")


def _randomish(alnum: str) -> bool:
    """Whether a run of ASCII letters and digits looks machine-generated.

    Random strings switch between lower case, upper case and digits at most positions; words,
    snake_case, paths and CamelCase identifiers mostly do not, or are made of long lower-case
    runs with vowels. Pure hex is judged by `_hex_secret` instead. Counting is done by C-level
    helpers (regex, `str.count`) so the cost stays linear in the length of the run.
    """
    switches = _CASE_RUN.subn("", alnum)[1] - 1
    if switches / (len(alnum) - 1) < 0.25 or _entropy(alnum) < 3.5:
        return False
    digits = sum(alnum.count(d) for d in string.digits)
    letters = len(alnum) - digits
    if not letters:
        return True
    in_words = sum(len(run) for run in _WORD_RUN.findall(alnum))
    vowels = sum(alnum.count(v) for v in "aeiouAEIOU")
    wordy = in_words / letters >= 0.6 and vowels / letters >= 0.25
    return not (wordy and digits / len(alnum) < 0.15)


def _hex_secret(hexrun: str) -> bool:
    has_digit = any(c.isdigit() for c in hexrun)
    has_letter = any(c.isalpha() for c in hexrun)
    return has_digit and has_letter and _entropy(hexrun) >= 3.0


def looks_secret(run: str, before: str, min_alnum: int) -> bool:
    """Judge one candidate run of base64/hex-ish characters (see docs/redaction.md)."""
    core = run.rstrip("=")
    if _UUID.fullmatch(core) or _SRI.match(core) or _CHECKSUM_LABEL.search(before[-24:]):
        return False
    if _HEX.fullmatch(core):
        if len(core) in _DIGEST_LENGTHS or _DIGEST_LABEL.search(before[-24:]):
            return False
        return len(core) >= min_alnum and _hex_secret(core)
    # Paths and identifiers that merely contain a digest (…/snapshots/<sha>, model_<sha>)
    # are judged without it.
    core = _UUID.sub("", core)
    parts = _PART_SPLIT.split(core)
    if len(parts) > 1 and not all(_HEX.fullmatch(p) for p in parts if p):
        core = "".join(
            p
            for p in parts
            if not (_HEX.fullmatch(p) and (len(p) in _DIGEST_LENGTHS or _HASH_PART.fullmatch(p)))
        )
    alnum = _PART_SPLIT.sub("", core)
    if len(alnum) < min_alnum:
        return False
    if _HEX.fullmatch(alnum):
        return _hex_secret(alnum)
    return _randomish(alnum)


def tokenish(value: str) -> bool:
    """A word that could be a credential: has a digit, or mixes case after its first letter."""
    if any(c.isdigit() for c in value):
        return True
    rest = value[1:]
    return any(c.isupper() for c in rest) and any(c.islower() for c in rest)
