"""Mask known secret shapes in text before it leaves the index.

Every text huiyi shows to an agent or a person (tool results, hook output, CLI, web page,
titles, error messages) goes through `redact` first, and only then is shortened, folded or
cut into snippets, so a secret can never be half-masked by a cut. The memory-write threat
scanner uses `secret_families` to refuse hard-coded secrets.

Redaction is defence in depth, not a vault: it recognises shapes (vendor prefixes, key=value
assignments, URL credentials, PEM blocks, long random-looking strings), and a secret that
looks like prose gets through. `docs/redaction.md` lists what is and is not covered.

This module is the engine: the passes, the exemption test and the scan. The rule tables it
reads live beside it: the shapes secrets come in (`secret_shapes`: vendor prefixes, command
lines), the names that announce one (`secret_names`: keys, query parameters, authorization
schemes) and what stands where a secret would and is none (`exemptions`: placeholders,
variable references, code, public ids).

Why it is shaped this way:

* One ordered list of passes, most specific first (a PEM block before the base64 lines in
  it, `sk-ant-` before `sk-`, vendor prefixes before assignments, assignments before the
  entropy net), so each secret is masked once, under the most telling family name.
* Every pattern is linear-time on Python's backtracking engine: a pattern that can fail after
  a long run starts only where such a run starts (a look-behind on the run's own characters)
  and consumes it possessively (`++`, `{n,}+`), so no run is rescanned from every offset and
  no quantifier gives characters back. `tests/test_redact.py` times adversarial 200,000
  character lines.
* The mask `[REDACTED:<family>]` matches none of the patterns, so redaction is idempotent:
  redacting redacted text changes nothing and counts nothing.
* Every pattern is compiled on its first use (`huiyi.text.lazyre`): compiled at import they
  would slow every process, and a pass whose needles never occur never needs its own.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import Callable, Iterable

from huiyi.safety.entropy import LONG_RUN, looks_secret, tokenish
from huiyi.safety.exemptions import (
    ATTRIBUTE_PATH,
    CODE_REF,
    CODE_WORDS,
    MEDIA_DATA_URI,
    PLACEHOLDER_SHAPE,
    PLACEHOLDER_WORDS,
    PUBLIC_ID_PARAM,
    TYPE_NAMES,
    VAR_REF,
)
from huiyi.safety.normalise import TOKEN_SPACES, View, view
from huiyi.safety.secret_names import (
    AUTH_SCHEMES,
    CJK_KEYS,
    GLUED_NAMES,
    GLUED_WORDS,
    KEY_QUALIFIERS,
    QUERY_NAMES,
    XML_SECRET_KEY,
)
from huiyi.safety.secret_shapes import CLI_SHAPES, PREFIXED, VENDOR_SHAPES, VendorShape
from huiyi.safety.unicode import strip_invisible
from huiyi.text.lazyre import lazy

__all__ = [
    "MAX_FIELD_CHARS",
    "Redacted",
    "mask",
    "redact",
    "redact_kept",
    "redact_many",
    "secret_families",
]

#: A field longer than this is masked whole: scanning it is not worth the risk of a miss.
MAX_FIELD_CHARS = 1_000_000


class Redacted:
    """Redacted text and how many masks were put into it. (A plain class, not a dataclass or
    a `NamedTuple`: every output passes here, see `huiyi.config`; and `count` is a method of a
    tuple.)"""

    __slots__ = ("count", "text")

    def __init__(self, text: str, count: int) -> None:
        self.text = text
        self.count = count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Redacted):
            return NotImplemented
        return (self.text, self.count) == (other.text, other.count)

    def __hash__(self) -> int:
        return hash((self.text, self.count))

    def __repr__(self) -> str:
        return f"Redacted(text={self.text!r}, count={self.count!r})"


def mask(family: str) -> str:
    """The replacement for one secret of `family`: short, deterministic, and inert."""
    return f"[REDACTED:{family}]"


_MASK_SOURCE = r"\[REDACTED:[a-z0-9\-]{1,40}\]"
_MASK = lazy(_MASK_SOURCE)


def _ci(*words: str) -> str:
    """`(?:Word|...)` spelled with `[Ww]` classes: much faster than `(?i:...)` on `re`,
    which case-folds every character it compares."""
    spelled = (
        "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)
        for word in words
    )
    return "(?:" + "|".join(spelled) + ")"


# --------------------------------------------------------------------------------------------
# Exemptions: exact placeholders and complete variable references, nothing else.
# --------------------------------------------------------------------------------------------

# One pattern for every exemption (`safety.exemptions`); the var-ref part comes last because
# its back-references count its own groups.
_EXEMPT = lazy(rf"{_MASK_SOURCE}|(?i:{PLACEHOLDER_SHAPE})|{VAR_REF}")


_QUOTES_AND_SPACE = frozenset("\"'` \t\n\\")


_ESCAPED_QUOTES = lazy(r"^\\{1,7}+([\"'])(.*?)(?:\\{1,7}+\1)?$", re.S)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    if value[:1] in ('"', "'", "`"):
        return value[1:]
    escaped = _ESCAPED_QUOTES().match(value) if value[:1] == "\\" else None
    return escaped[2] if escaped else value


def _is_exempt(value: str) -> bool:
    """True for values that are not secrets: empty, already masked, a placeholder, or a
    complete variable reference. `$hunter2` is not a reference: only UPPER_CASE env names
    count after a bare `$`."""
    inner = _unquote(value.strip()).strip() if value[:1] in _QUOTES_AND_SPACE else value
    if not inner:
        return True
    if inner.lower() in PLACEHOLDER_WORDS or _EXEMPT().fullmatch(inner) is not None:
        return True
    # already masked, give or take an escaped newline (`"[REDACTED:private-key]\\n"`)
    return "[REDACTED:" in inner and not _MASK().sub("", inner).replace("\\n", "").strip()


# --------------------------------------------------------------------------------------------
# The passes.
# --------------------------------------------------------------------------------------------


class _Found(list[str]):
    """The families masked so far, and, while a scan is tracked, the edits of the current
    pass: (start, end, replacement) in the coordinates of the text the pass was given."""

    edits: list[tuple[int, int, str]] | None = None
    regions: _Regions | None = None
    #: the view the scan began on (None: the original itself), and the positions in it of
    #: the blanks and control characters an escape decoded to (`_escaped_blanks`)
    view: View | None = None
    blanks: list[int] | None = None


_Pass = Callable[[str, _Found], str]


def _record(found: _Found, start: int, old: str, new: str) -> None:
    """Note that `old` at `start` became `new`, trimmed to what changed (the key, the quotes
    and the scheme in front of a value stay out of the edit)."""
    if found.edits is None:
        return
    prefix = 0
    limit = min(len(old), len(new))
    # the trim never reaches into a mask: a secret starting with `[` (`%5b…`, decoded) or
    # ending with `]` is replaced whole, not from its second character
    first, last = new.find("[REDACTED:"), new.rfind("]") + 1
    head = min(limit, first) if first >= 0 else limit
    while prefix < head and old[prefix] == new[prefix]:
        prefix += 1
    tail = min(limit - prefix, len(new) - last) if first >= 0 else limit - prefix
    suffix = 0
    while suffix < tail and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    found.edits.append((start + prefix, start + len(old) - suffix, new[prefix : len(new) - suffix]))


def _sub(
    pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], text: str, found: _Found
) -> str:
    """`pattern.sub(replace, text)`, recording each change when the scan is tracked."""
    if found.edits is None:
        return pattern.sub(replace, text)
    out: list[str] = []
    done = 0
    for m in pattern.finditer(text):
        new = replace(m)
        if new == m[0]:
            continue
        out.append(text[done : m.start()])
        out.append(new)
        _record(found, m.start(), m[0], new)
        done = m.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _gated(needles: tuple[str, ...], *, fold: bool = False) -> Callable[[_Pass], _Pass]:
    """Skip a pass unless one of its literal needles occurs (a C-speed substring test that
    keeps ordinary text from paying for every pattern)."""

    def wrap(run: _Pass) -> _Pass:
        def gated(text: str, found: _Found) -> str:
            hay = text.lower() if fold else text
            return run(text, found) if any(n in hay for n in needles) else text

        return gated

    return wrap


def _simple(
    family: str,
    pattern: str,
    check: Callable[[str], bool] | None,
    needles: tuple[str, ...],
) -> _Pass:
    """A pass that masks each whole match of `pattern` (unless `check` declines it)."""
    regex = lazy(pattern)

    @_gated(needles)
    def run(text: str, found: _Found) -> str:
        def replace(m: re.Match[str]) -> str:
            if _is_exempt(m[0]) or (check is not None and not check(m[0])):
                return m[0]
            found.append(family)
            return mask(family)

        return _sub(regex(), replace, text, found)

    return run


def _vendor_check(shape: VendorShape) -> Callable[[str], bool] | None:
    """What a match of `shape` must pass to be masked (`VendorShape.body`), None for nothing."""
    start, token_like = shape.body, shape.tokenish
    if start is None:
        return None

    def check(token: str) -> bool:
        body = token[start:]
        return not _is_exempt(body) and (not token_like or tokenish(body)) and len(set(body)) > 3

    return check


# Vendor prefixes (`safety.secret_shapes`), one pass each.
_VENDOR_PASSES: list[_Pass] = [
    _simple(shape.family, shape.pattern, _vendor_check(shape), shape.needles)
    for shape in VENDOR_SHAPES
]


# The other vendor prefixes (`safety.secret_shapes.PREFIXED`): one pass runs the families
# whose needles occur.
@functools.lru_cache(maxsize=64)
def _prefixed_regex(indexes: tuple[int, ...]) -> re.Pattern[str]:
    branches = "|".join(f"(?P<f{i}>{PREFIXED[i][1]})" for i in indexes)
    return re.compile(rf"(?<![A-Za-z0-9_\-.])(?:{branches})(?![A-Za-z0-9_\-])")


@functools.cache
def _prefixed_needles() -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """One scan for every needle (a lookahead, so needles that overlap are all seen), and the
    families each needle found shows present: its own, and those of every needle it starts
    with (`lin_oauth_` found means `lin_` is there too)."""
    needles = sorted({n for _, _, ns in PREFIXED for n in ns}, key=len, reverse=True)
    owners: dict[str, set[int]] = {n: set() for n in needles}
    for i, (_, _, ns) in enumerate(PREFIXED):
        for n in ns:
            owners[n].add(i)
    shows = {
        n: frozenset(i for other in needles if n.startswith(other) for i in owners[other])
        for n in needles
    }
    scan = re.compile("(?=(" + "|".join(re.escape(n) for n in needles) + "))")
    return scan, shows


def _prefixed(text: str, found: _Found) -> str:
    scan, shows = _prefixed_needles()
    seen = {m[1] for m in scan.finditer(text)}
    present = tuple(sorted({i for n in seen for i in shows[n]}))
    if not present:
        return text

    def replace(m: re.Match[str]) -> str:
        family = PREFIXED[int((m.lastgroup or "f0")[1:])][0]
        if _is_exempt(m[0]) or len(set(m[0])) < 10:
            return m[0]
        found.append(family)
        return mask(family)

    return _sub(_prefixed_regex(present), replace, text, found)


@functools.cache
def _split_token_regex() -> re.Pattern[str]:
    """A run that starts with a vendor prefix and goes on after line breaks (`ghp_…` cut by a
    terminal's width). Only prefixes of three characters or more that hold a separator or
    are four long: a bare `SK` or `pat` starts too many words."""
    needles = sorted(
        {
            n
            for n in (
                *(n for shape in VENDOR_SHAPES for n in shape.needles),
                *(n for _, _, ns in PREFIXED for n in ns),
            )
            if len(n) >= 3 and (not n.isalnum() or len(n) >= 4) and "/" not in n
        },
        key=len,
        reverse=True,
    )
    prefix = "|".join(re.escape(n) for n in needles)
    return re.compile(
        rf"(?<![A-Za-z0-9_\-.])(?:{prefix})[A-Za-z0-9_\-.]{{0,300}}+"
        r"(?:\r?\n[ \t]{0,8}+[A-Za-z0-9_\-.]{1,300}+){1,8}+"
    )


#: A line break and the indentation after it, as `LINE_BREAKS` reads one.
_LINE_BREAK = lazy(r"\r?\n[ \t]{0,8}+")
#: A last piece that is a word going on as prose (`then` of `then restart`), not a token's end.
_PROSE_WORD = lazy(r"[a-z]{1,12}+")


def _split_tokens(text: str, found: _Found) -> str:
    """A vendor token split across lines, masked whole when the joined run is one: joined
    only here, never in general (two ordinary lines joined make new runs: `MAX_TOKEN: 64` and
    the next line), and only where the first line alone was no token."""
    if "\n" not in text:
        return text

    def replace(m: re.Match[str]) -> str:
        # the token may end before the last line does (`AKIA…` cut in two, then `then
        # restart`): the most lines that still join into a token are taken, the rest kept
        lines = _LINE_BREAK().split(m[0])
        breaks = _LINE_BREAK().findall(m[0])
        after = text[m.end() : m.end() + 1]
        for taken in range(len(lines), 1, -1):
            going_on = after if taken == len(lines) else breaks[taken - 1][:1]
            if going_on in (" ", "\t") and _PROSE_WORD().fullmatch(lines[taken - 1]):
                continue
            inner = _Found()
            joined = "".join(lines[:taken])
            for run in (*_VENDOR_PASSES, _prefixed):
                run(joined, inner)
            if inner:
                found.extend(inner)
                masked = mask(inner[0]) if len(inner) == 1 else " ".join(mask(f) for f in inner)
                kept = zip(breaks[taken - 1 :], lines[taken:], strict=True)
                rest = "".join(b + line for b, line in kept)
                return masked + rest
        return m[0]

    return _sub(_split_token_regex(), replace, text, found)


# PEM private keys: a whole block, or the whole field when a block is unclosed or mismatched.
def _whole_field(text: str, found: _Found) -> str:
    found.append("private-key")
    if found.edits is not None:
        found.edits.clear()  # the field replaces this pass's earlier blocks
    _record(found, 0, text, mask("private-key"))
    return mask("private-key")


_PEM_BEGIN = lazy(r"-----BEGIN ((?:[A-Z0-9]++ ){0,3})PRIVATE KEY( BLOCK)?-----", re.I)
_PEM_END = lazy(r"-----END ((?:[A-Z0-9]++ ){0,3})PRIVATE KEY( BLOCK)?-----", re.I)


def _pem_kind(m: re.Match[str]) -> str:
    return (m[1] + "PRIVATE KEY" + (m[2] or "")).upper()


def _pem(text: str, found: _Found) -> str:
    """Mask BEGIN…END private-key blocks. Returns the mask alone (whole field) when a block
    is unclosed, a BEGIN meets the END of another kind, or an END has no BEGIN."""
    if "-----" not in text:
        return text
    whole = mask("private-key")
    out: list[str] = []
    pos = 0
    while True:
        begin = _PEM_BEGIN().search(text, pos)
        stop = begin.start() if begin else len(text)
        if _PEM_END().search(text, pos, stop):
            return _whole_field(text, found)
        if begin is None:
            out.append(text[pos:])
            return "".join(out)
        end = _PEM_END().search(text, begin.end())
        if (
            end is None
            or _pem_kind(end) != _pem_kind(begin)
            or _PEM_BEGIN().search(text, begin.end(), end.start())
        ):
            return _whole_field(text, found)
        out.append(text[pos : begin.start()])
        out.append(whole)
        found.append("private-key")
        _record(found, begin.start(), text[begin.start() : end.end()], whole)
        pos = end.end()


# Bearer tokens and Authorization headers.
_BEARER = lazy(
    r"(?<![A-Za-z0-9_\-])(?P<head>" + _ci("bearer") + r"[ \t]++)(?P<value>[A-Za-z0-9\-._~+/]++=*+)"
)


@_gated(("bearer",), fold=True)
def _bearer(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        value = m["value"]
        if len(value) < 8 or _is_exempt(value) or not tokenish(value):
            return m[0]
        found.append("bearer")
        return m["head"] + mask("bearer")

    return _sub(_BEARER(), replace, text, found)


_AUTH_SCHEMES = _ci(*AUTH_SCHEMES)
_AUTH_SCHEME_WORD = lazy(_AUTH_SCHEMES)
_VALUE_SPECIAL = (
    r"\[(?:REDACTED|redacted):[a-z0-9\-]{1,40}\]"
    r"|\$?\{\{[^{}\n]{0,200}+\}\}"
    r"|\$\{[A-Za-z_][A-Za-z0-9_]{0,127}+\}"
    r"|\{[A-Za-z_][A-Za-z0-9_.]{0,127}+\}"
)
_AUTHORIZATION = lazy(
    r"(?<![A-Za-z0-9_\-])(?P<head>"
    + _ci("proxy-authorization", "authorization")
    + r"[\"']?[ \t]*+(?:=>|[:=])[ \t]*+(?:[fbr]?[\"'])?[ \t]*+"
    # a known scheme, or any word followed by a long credential (`Splunk <token>`)
    + rf"(?:{_AUTH_SCHEMES}[ \t]++|[A-Za-z]{{2,20}}+[ \t]++(?=[^\s\"'`,;]{{16}}))?)"
    rf"(?P<value>{_VALUE_SPECIAL}|[^\s\"'`,;]++)"
)


@_gated(("authorization",), fold=True)
def _authorization(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        value = m["value"]
        if _is_exempt(value) or _AUTH_SCHEME_WORD().fullmatch(value):
            return m[0]
        if not (tokenish(value) or len(value) >= 16 or _MASK().fullmatch(value)):
            return m[0]  # prose: "the Authorization: header"
        found.append("authorization")
        return m["head"] + mask("authorization")

    return _sub(_AUTHORIZATION(), replace, text, found)


# URLs: passwords in user:password@host, secret query parameters, random path segments.
# The password runs to the last `@` that a host follows, so one holding `@`, `#` or `/`
# (`postgres://app:p@ss#1/x@db:5432/app`) is masked whole; an `@` after a `/` starts a path
# segment (`/@types/node`), not a host.
_URL_USERINFO = lazy(
    r"(?<![A-Za-z0-9+.\-])(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,31}+://)"
    # the whole run up to a space, read for a password holding a quote (`_quoted_password`)
    r"(?=(?P<run>[^\s]{1,1024}+))"
    # a line break may cut the userinfo (`postgres://app:n3` and `n74g630j@db/x` below it)
    r"(?P<info>[^\s'\"<>]{1,1024}+(?:\r?\n[^\s'\"<>@/]{1,256}+@[^\s'\"<>]{1,1024}+)?)"
)
_URL_HOST = lazy(r"[A-Za-z0-9](?:[A-Za-z0-9\-.]{0,253}+)(?::[0-9]{1,5}+)?(?=[/?#\s'\"<>]|$)")
_URL_USER = lazy(r"[^\s:/?#@'\"<>\[\]]{0,256}+")


_URL_REAL_HOST = lazy(
    r"(?:localhost|[0-9.]{7,15}+|(?:[A-Za-z0-9\-]{1,63}+\.){1,8}+[A-Za-z]{2,63}+)(?::[0-9]{1,5}+)?"
    r"|[A-Za-z0-9\-.]{1,253}+:[0-9]{1,5}+"
)


def _url_at(info: str) -> int:
    """Where the host starts in what follows `scheme://` (after the userinfo's `@`), or -1.

    The last `@` a host follows is the boundary, so a raw password holding `@`, `#`, `/` or
    `%` is masked whole (`app:p@ss#1/x@db`); an `@` stops being a candidate only once a host
    that is surely one (a dotted name, an address, `localhost`, a port) has been followed by
    its path, query or fragment (`pw@registry.npmjs.org/@types/node`). After a bare name
    (`db`) a path holding `@` cannot be told from more password: it is masked with it."""
    at = -1
    i = info.find("@")
    while i >= 0:
        if at >= 0:
            real = _URL_REAL_HOST().match(info, at + 1)
            after = info[real.end() : real.end() + 1] if real is not None else ""
            if real is not None and real.end() < i and after in ("/", "?", "#"):
                break  # the path has begun
        if _URL_HOST().match(info, i + 1):
            at = i
        i = info.find("@", i + 1)
    return at


#: the characters that end a URL's run once an escape is decoded (`%22`, `%27`, `%3c`, `%3e`,
#: `&lt;`): a password holding one is read over the whole run without spaces
_URL_ENDS = ("'", '"', "<", ">")
#: what a blank or control character an escape decoded to (`%20`, `%09`, `&#9;`) reads as for
#: the URL pass: a character of the run, as the escape itself was
_ESCAPED_BLANK = "\x1a"
_BLANK = lazy(r"[\s\x00-\x1f\x7f-\x9f]")


def _escaped_blanks(text: str, found: _Found) -> str:
    """`text` with every blank or control character that an escape of the original decoded to
    as `_ESCAPED_BLANK`: the same length and positions, so a URL's run reads through it
    (`postgres://app:a%20b@db`, a password holding a space, is one URL, not two words)."""
    seen, regions = found.view, found.regions
    if seen is None or seen.starts is None or seen.ends is None or regions is None:
        return text  # the view is the original: no escape was decoded
    if found.blanks is None:
        starts, ends, source = seen.starts, seen.ends, seen.source
        found.blanks = [
            i
            for i in (m.start() for m in _BLANK().finditer(seen.text))
            if ends[i] - starts[i] > 1 and source[starts[i]] in "%&"
        ]
    chars: list[str] | None = None
    for first in found.blanks:
        at = regions.current(first)
        if at is None or at >= len(text) or text[at] != seen.text[first]:
            continue  # masked already
        chars = chars if chars is not None else list(text)
        chars[at] = _ESCAPED_BLANK
    return text if chars is None else "".join(chars)


def _quoted_password(run: str) -> tuple[int, int] | None:
    """(where the password starts, where its host's `@` is) in `run`, the text after
    `scheme://` up to a space, when the password holds a quote or an angle bracket; the host
    must not be closed by one itself (`"postgres://a:b@db","c@d.org"` is two strings)."""
    at = _url_at(run)
    user = _URL_USER().match(run)
    if at < 0 or user is None or user.end() >= at or run[user.end()] != ":":
        return None
    value = run[user.end() + 1 : at]
    host = _URL_HOST().match(run, at + 1)
    if (
        host is None
        or run[host.end() : host.end() + 1] in _URL_ENDS
        or not any(c in value for c in _URL_ENDS)
        or _is_exempt(value)
    ):
        return None
    return user.end() + 1, at


def _url_userinfo(m: re.Match[str], text: str, found: _Found) -> tuple[int, int, str] | None:
    """The edit (start, end, replacement; positions of `text`) that masks the password or the
    token in the userinfo `m` found (on `text` read through `_escaped_blanks`), or None."""
    base = m.start("run")
    quoted = _quoted_password(m["run"])
    if quoted is not None:
        start, at = quoted
        found.append("url-password")
        return base + start, base + at, mask("url-password")
    info = m["info"]
    if "@" not in info:
        return None
    at = _url_at(info)
    user = _URL_USER().match(info)
    if at < 0 or user is None:
        return None
    if user.end() < at and info[user.end()] == ":":
        value, read = text[base + user.end() + 1 : base + at], info[user.end() + 1 : at]
        if not value or _is_exempt(value):
            return None
        if "\n" in read and read.split("\n")[0].rstrip("\r").isdigit():
            return None  # `host:8080` ends a line; the next line's `user@host` is a mail
        found.append("url-password")
        return base + user.end() + 1, base + at, mask("url-password")
    # no password, a token as the user: `https://<key>@o1.ingest.sentry.io/1`
    token = text[base : base + at]
    plain = not any(c in token for c in ":/\n")
    if len(token) >= 16 and plain and tokenish(token) and not _is_exempt(token):
        found.append("url-token")
        return base, base + at, mask("url-token")
    return None


@_gated(("://",))
def _url_password(text: str, found: _Found) -> str:
    """A URL's password (`user:password@host`), or a token as its user, masked to the last `@`
    a host follows (`_url_at`). One pass over every URL: its run is read up to a quote or an
    angle bracket (and across a line break that cuts the userinfo), or, when the password
    holds one (an escape the normaliser decoded), over the whole run without spaces; a blank
    or control character an escape decoded to is read as part of the run."""
    read = _escaped_blanks(text, found)
    out: list[str] = []
    done = 0
    for m in _URL_USERINFO().finditer(read):
        if m.start() < done:
            continue  # inside the password masked last
        edit = _url_userinfo(m, text, found)
        if edit is None:
            continue
        start, end, new = edit
        out.append(text[done:start])
        out.append(new)
        _record(found, start, text[start:end], new)
        done = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


_QUERY_SECRET = lazy(rf"(?P<head>[?&;]{_ci(*QUERY_NAMES)}=)(?P<value>[^&#\s'\"<>`]++)")


@_gated(("=",))
def _query_secret(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        if _is_exempt(m["value"]):
            return m[0]
        found.append("query-secret")
        return m["head"] + mask("query-secret")

    return _sub(_QUERY_SECRET(), replace, text, found)


_URL = lazy(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}+://[^\s'\"<>`]++")
_URL_SEGMENT = lazy(r"(?<![A-Za-z0-9_\-~+])[A-Za-z0-9_\-~+]{20,}+")
_PUBLIC_ID_PARAM = lazy(PUBLIC_ID_PARAM, re.IGNORECASE)


@_gated(("://",))
def _url_token(text: str, found: _Found) -> str:
    def replace_url(m: re.Match[str]) -> str:
        url = m[0]

        def replace_segment(s: re.Match[str]) -> str:
            at = slash + s.start()
            before = url[max(0, at - 24) : at]
            if _PUBLIC_ID_PARAM().search(before):
                return s[0]  # a video or playlist id, a share id: public
            if _is_exempt(s[0]) or not looks_secret(s[0], before, 20):
                return s[0]
            found.append("url-token")
            return mask("url-token")

        # the host is never a secret
        start = url.find("://") + 3
        slash = url.find("/", start)
        if slash < 0:
            return url
        return url[:slash] + _URL_SEGMENT().sub(replace_segment, url[slash:])

    return _sub(_URL(), replace_url, text, found)


# Credentials on command lines and in credential files (`safety.secret_shapes.CLI_SHAPES`).
_CLI_SHAPES = tuple((family, lazy(pattern), needles) for family, pattern, needles in CLI_SHAPES)
_XML_SECRET_KEY = lazy(XML_SECRET_KEY, re.I)


def _cli_credentials(text: str, found: _Found) -> str:
    for family, regex, needles in _CLI_SHAPES:
        if not any(n in text for n in needles):
            continue

        def replace(m: re.Match[str], family: str = family) -> str:
            group = "line" if "line" in m.groupdict() and m["line"] is not None else "value"
            value = m[group]
            named = family
            skip = 0  # characters of the value before the secret (`pass:` in openssl's)
            if family == "cli-flag":
                inner = value.strip("\"'")
                if inner.startswith(("env:", "file:", "fd:", "stdin")):
                    return m[0]  # openssl's `-passin env:VAR`: where the secret is, not it
                if inner.startswith("pass:"):
                    skip = value.index("pass:") + 5
                elif m["word"] in ("passin", "passout") or "=" in value:
                    return m[0]  # `--secret id=npmrc,src=…`: a spec, not the secret
                named = _assignment_family(m["word"].replace("-", "_"), False)
            elif family == "xml":
                if not _XML_SECRET_KEY().search(m["word"]):
                    return m[0]
                named = _assignment_family(m["word"].lower(), False)
            if _is_exempt(value) or _is_code(value):
                return m[0]
            found.append(named)
            start, end = m.span(group) if group in m.groupdict() else m.span("value")
            if skip:
                start, value = start + skip, value[skip:]
            quote = value[0] if value[:1] in ('"', "'") else ""
            close = quote if quote and value.endswith(quote) and len(value) > 1 else ""
            return (
                m[0][: start - m.start()] + f"{quote}{mask(named)}{close}" + m[0][end - m.start() :]
            )

        text = _sub(regex(), replace, text, found)
    return text


# Assignments: key kept, value masked, in env, YAML, JSON, dotted-config and header form.
# The match starts at the secret word that ends the key (`password` in `DB_PASSWORD`,
# `Secret` in `clientSecret`), so non-secret keys never consume text, and the rest of the key
# is read back from the text before it. The key words are `safety.secret_names`'.
# The pattern runs on ASCII-lower-cased text (same length, so spans carry over to the
# original): a plain literal alternation lets `re` skip ahead by first character instead of
# trying every branch at every offset. The value is then read from the original text.
_SEP = r"[ \t]{0,16}+(?:=>|:=|==|->|→|⇒|[:=：是为為])(?:\*\*|__)?[ \t]{0,16}+"
_ASSIGNMENT = lazy(
    r"(?:(?P<key>(?:passwd|password|passphrase|pass|pwd|client[_\-]?secret|secret"
    r"|credentials|credential|token|(?:" + "|".join(KEY_QUALIFIERS) + r")[_\-]?key|key)"
    r"(?:[_\-](?:base|value))?)(?![a-z0-9_.\-])(?:\\{0,7}+[\"'])?"
    rf"(?P<sep>{_SEP})"
    r"|(?P<cjk_key>" + "|".join(CJK_KEYS) + rf")(?P<cjk_sep>{_SEP}|[ \t]{{1,4}}+(?=[!-~])))"
    rf"(?P<value>{_VALUE_SPECIAL}"
    r"|(?:os\.environ|os\.getenv|process\.env|env)[^\s,;)}\]]{0,160}+[)\]]?"
    r"|\\{1,7}+\"[^\"\\\n]{0,4096}+\\{1,7}+\""  # JSON inside a JSON string: \"secret\"
    r"|\"(?:[^\"\\\n]|\\.)*+\"?"
    r"|'(?:[^'\\\n]|\\.)*+'?"
    r"|`[^`\n]{1,512}+`"
    r"|[^\s'\"`,;)}\]，。；、）】」]++)"
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_CODE_REF = lazy(CODE_REF)
#: a call whose first argument is a string, a name or nothing: `getpass.getpass('Password: ')`
_CODE_CALL = lazy(r"[A-Za-z_][A-Za-z0-9_.]{0,127}+\((?=[\"'A-Za-z_)])")
_NOT_ASCII = lazy(r"[^\x00-\x7f]")


_OPEN_QUOTE = lazy(r"\\{0,7}+[\"'`]")
_ATTRIBUTE_PATH = lazy(ATTRIBUTE_PATH)


def _glued_env_name(text: str, start: int, end: int, word: str) -> bool:
    """`PGPASSWORD`, `SSHPASS`: an all-capitals name that glues a secret word onto a prefix."""
    begin = start
    while (
        begin > 0 and start - begin < 64 and (text[begin - 1].isalnum() or text[begin - 1] == "_")
    ):
        begin -= 1
    name = text[begin:end]
    if not name.isascii() or not name.isupper():
        return False
    return word in GLUED_WORDS or name in GLUED_NAMES


def _is_code(value: str) -> bool:
    """A keyword, an attribute path or a command substitution where a value would be."""
    if value in CODE_WORDS or value.startswith(("$(", "`")):
        return True
    return _ATTRIBUTE_PATH().fullmatch(value) is not None


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_-"


def _password_like(value: str) -> bool:
    """A value with a digit, mixed case or a symbol: not a plain word."""
    return tokenish(value) or any(not c.isalnum() for c in value)


def _bare_key_is_secret(text: str, start: int, end: int, sep: str, value: str) -> bool:
    """A `key` with no qualifier is a secret's name only as an environment name
    (`LOGDNA_INGESTION_KEY=…`, `WRITEKEY=…`) or a header (`Ocp-Apim-Subscription-Key: …`),
    with a value that looks made by a machine; `primary_key = "id"` and `key: password` are
    code and config."""
    begin = start
    while begin > 0 and start - begin < 64 and _name_char(text[begin - 1]):
        begin -= 1
    name = text[begin:end]
    inner = _unquote(value.strip())
    if "-" in name and ":" in sep:
        return len(inner) >= 16 and tokenish(inner)
    return name.isupper() and len(name) > 3 and len(inner) >= 8 and tokenish(inner)


@functools.lru_cache(maxsize=256)
def _assignment_family(word: str, aws: bool) -> str:
    """The family named by the secret word that ends a key (`password` in `DB_PASSWORD`)."""
    if aws and ("secret" in word or word.endswith("access_key")):
        return "aws-secret"
    if any(w in word for w in ("pass", "pwd", "密码", "口令")):
        return "password"
    if "token" in word or "令牌" in word:
        return "token"
    if word.endswith(("key", "key_base", "key-base", "key_value", "key-value")):
        return "api-key"
    return "secret"


@_gated(("pass", "pwd", "secret", "credential", "token", "key", *CJK_KEYS), fold=True)
def _assignment(text: str, found: _Found) -> str:
    out: list[str] = []
    done = 0
    folded = text.translate(_ASCII_LOWER)
    for m in _ASSIGNMENT().finditer(folded):
        start = m.start()
        word = m["key"]
        if word is not None and start > 0:
            # the secret word must start the key or one of its words: `DB_PASSWORD`,
            # `dbPassword`, not `bypass` or `SMTPPASS`; an upper-case environment name may
            # glue it on (`PGPASSWORD`, `SSHPASS`)
            before = text[start - 1]
            if (before.isascii() and before.isalnum()) or before == "$":
                if not (
                    ((before.islower() or before.isdigit()) and text[start].isupper())
                    or _glued_env_name(text, start, m.end("key"), word)
                ):
                    continue
            elif word == "pwd" and before not in "_.-":
                continue  # $PWD is the working directory, not a password
        elif word == "pwd":
            continue
        v_start, v_end = m.span("value")
        value = text[v_start:v_end]
        sep = m["sep"] if word is not None else m["cjk_sep"]
        if word is None:
            # after a Chinese key the value is written in ASCII (`密码：hunter2`), not
            # Chinese words (`密码是必填项`), and ends where the Chinese resumes
            if not "!" <= value[:1] <= "~":
                continue
            cut = _NOT_ASCII().search(value)
            if cut:
                v_end = v_start + cut.start()
                value = value[: cut.start()]
            if not sep.strip() and not (len(value) >= 6 and _password_like(value)):
                continue  # `密码 错误`, `密码 policy`: no separator, no secret
        elif word == "key" and not _bare_key_is_secret(text, start, m.end("key"), sep, value):
            continue
        # a value in backticks after `:` or an arrow is quoted (Markdown: `password → `…``);
        # after `=` it is a command substitution (`PASSWORD=`cat /run/secrets/db``)
        quoted = value[:1] == "`" and "=" not in sep
        if (
            _is_exempt(value.strip("`") if quoted else value)
            or _CODE_REF().fullmatch(value)
            or _CODE_CALL().match(text, v_start)
            or (_is_code(value) and not quoted)
        ):
            continue
        if value in TYPE_NAMES and ":" in sep:
            continue
        if len(value) <= 3 and not any(c.isalnum() for c in value):
            continue  # `'Password: ')`: the string ends, no value follows
        if word is None:
            family = _assignment_family(m["cjk_key"], False)
        else:
            # `aws_secret_access_key`: the key's start lies within the 64 characters before
            aws = ("secret" in word or "key" in word) and "aws" in folded[start - 64 : start]
            family = _assignment_family(word, aws)
        if family != "password" and len(value) <= 4 and value.isdigit():
            continue  # MAX_TOKEN = 64: a setting, not a secret
        found.append(family)
        opening = _OPEN_QUOTE().match(value)
        quote = opening[0] if opening else ""
        close = quote if quote and len(value) > len(quote) and value.endswith(quote) else ""
        out.append(text[done:v_start])
        out.append(f"{quote}[REDACTED:{family}]{close}")
        _record(found, v_start, value, out[-1])
        done = v_end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


# Secrets in structure rather than in an assignment: XML elements and Markdown tables.
_SECRET_NAME = lazy(
    r"(?:^|[^a-z])(?:passwd|password|passphrase|pwd|secret|client[_\- ]?secret|token"
    r"|access[_\- ]?token|api[_\- ]?key|private[_\- ]?key|secret[_\- ]?key|access[_\- ]?key"
    r"|credentials?)$|" + "|".join(CJK_KEYS)
)
_XML_ELEMENT = lazy(
    r"<(?P<tag>[A-Za-z_][\w.\-:]{0,63}+)(?P<attrs>[ \t][^<>\n]{0,300}+)?>"
    r"(?P<value>[^<>\n]{1,512}+)</(?P=tag)[ \t]*+>"
)
_CAMEL = lazy(r"(?<=[a-z0-9])(?=[A-Z])")
_XML_NAMING_ATTR = lazy(r"\b(?:key|name|id)[ \t]*+=[ \t]*+[\"'](?P<name>[^\"'\n]{1,64}+)[\"']")


def _secret_name(name: str) -> str | None:
    """The family a name (a tag, a column, a key cell) announces, or None."""
    plain = _CAMEL().sub("_", name.strip(" \t*`_")).lower().split(":")[-1]
    if not plain or _SECRET_NAME().search(plain) is None:
        return None
    return _assignment_family(plain.replace(" ", "_"), False)


def _structured_value(value: str) -> bool:
    """A value worth masking in a tag or a cell: not empty, no placeholder or reference."""
    inner = value.strip().strip("`'\"")
    return bool(inner) and not _is_exempt(inner) and not _is_code(inner)


@_gated(("</",))
def _xml_elements(text: str, found: _Found) -> str:
    """`<password>…</password>`, `<DbPassword>…</DbPassword>`, and an element named by a key
    attribute: `<entry key="smtp.password">…</entry>`."""

    def replace(m: re.Match[str]) -> str:
        family = _secret_name(m["tag"])
        if family is None and m["attrs"]:
            named = _XML_NAMING_ATTR().search(m["attrs"])
            family = _secret_name(named["name"].replace(".", "_")) if named else None
        if family is None or not _structured_value(m["value"]):
            return m[0]
        found.append(family)
        start, end = m.span("value")
        return m[0][: start - m.start()] + mask(family) + m[0][end - m.start() :]

    return _sub(_XML_ELEMENT(), replace, text, found)


_TABLE_RULE = lazy(r"[ \t]*+\|?[ \t]*+:?-{2,}+:?[ \t]*+(?:\|[ \t]*+:?-{2,}+:?[ \t]*+)*+\|?[ \t]*+")


def _cells(line: str) -> list[tuple[int, int]]:
    """The spans of a Markdown table row's cells (between its `|`), trimmed."""
    bars = [i for i, ch in enumerate(line) if ch == "|"]
    edges = [-1, *bars, len(line)]
    if bars and not line[: bars[0]].strip():
        edges = edges[1:]  # the row starts with `|`
    out = []
    for a, b in itertools.pairwise(edges):
        cell = line[a + 1 : b]
        if not cell.strip() and b == len(line):
            continue  # after the closing `|`
        lead = len(cell) - len(cell.lstrip())
        out.append((a + 1 + lead, a + 1 + len(cell.rstrip())))
    return out


@_gated(("|",))
def _markdown_tables(text: str, found: _Found) -> str:
    """Markdown tables: the cells of a column whose header names a secret (`| user |
    password |`), and the value beside a key cell that names one (`| DB_PASSWORD | … |`)."""
    if "\n" not in text or "--" not in text:
        return text
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    edits: list[tuple[int, int, str]] = []
    i = 1
    while i < len(lines):
        if "|" not in lines[i - 1] or not _TABLE_RULE().fullmatch(lines[i]):
            i += 1
            continue
        header = lines[i - 1]
        columns = {
            n: family
            for n, (a, b) in enumerate(_cells(header))
            if (family := _secret_name(header[a:b])) is not None
        }
        row = i + 1
        while row < len(lines) and "|" in lines[row]:
            cells = _cells(lines[row])
            targets = dict(columns)
            if len(cells) >= 2:
                named = _secret_name(lines[row][cells[0][0] : cells[0][1]])
                if named is not None:
                    targets.setdefault(1, named)
            for n, family in sorted(targets.items()):
                if n >= len(cells):
                    continue
                a, b = cells[n]
                cell = lines[row][a:b]
                if not _structured_value(cell):
                    continue
                quote = "`" if cell.startswith("`") and cell.endswith("`") and len(cell) > 1 else ""
                found.append(family)
                edits.append((offsets[row] + a, offsets[row] + b, f"{quote}{mask(family)}{quote}"))
            row += 1
        i = row
    if not edits:
        return text
    out: list[str] = []
    done = 0
    for start, end, replacement in edits:
        out.append(text[done:start])
        out.append(replacement)
        _record(found, start, text[start:end], replacement)
        done = end
    out.append(text[done:])
    return "".join(out)


# A secret's name, a space, and the value, with no `=` or `:` between: `my api key 9f86…`,
# `secret 16926202…`, a header written with a space (`X-Auth-Token 2cec…`). A long hex value
# is a digest anywhere else; after such a name it is the key itself.
_NAMED_VALUE = lazy(
    r"(?<![\w\-])(?P<name>(?:[a-z0-9]{1,20}+[_\-]){0,3}"  # a header's words: `X-Auth-Token`
    r"(?:(?:api|access|secret|auth|private|client|signing)[_ \-]?key"
    r"|secret|token|access[_ \-]?token|password|passwd|passphrase))"
    r"(?P<gap>[ \t]++(?:is[ \t]++)?)(?P<value>[A-Za-z0-9_\-+/=]{32,512}+)(?![\w\-+/=])",
    re.IGNORECASE,
)


@_gated(("key", "KEY", "Key", "secret", "Secret", "token", "Token", "pass", "Pass"))
def _named_value(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        value = m["value"]
        digits = sum(c.isdigit() for c in value)
        if digits < 4 or digits == len(value) or not any(c.isalpha() for c in value):
            return m[0]
        if _is_code(value) or "[REDACTED:" in value:
            return m[0]
        family = _secret_name(m["name"].replace(" ", "_")) or "secret"
        found.append(family)
        return m["name"] + m["gap"] + mask(family)

    return _sub(_NAMED_VALUE(), replace, text, found)


# Credentials wrapped in base64: a run that decodes to `user:password`, to a JSON or an
# assignment holding a password, or to a token the passes above know (`echo YWRt… | base64 -d`,
# `.npmrc`'s `_auth=`, a docker config's `"auth": "…"`).
_BASE64_RUN = lazy(
    r"(?<![A-Za-z0-9+/_\-])(?P<run>[A-Za-z0-9+/]{16,4096}+={0,2}+)(?![A-Za-z0-9+/=])"
)
_USER_PASSWORD = lazy(r"[\w.$@\-]{1,64}+:[^\s:]{4,256}+")


def _decoded(run: str) -> str | None:
    import base64
    import binascii

    if len(run) % 4:
        return None
    try:
        raw = base64.b64decode(run, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decoded if decoded.isprintable() else None


def _base64_credentials(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        run = m["run"]
        if not any(c.isdigit() for c in run) and not run.endswith("="):
            return m[0]
        decoded = _decoded(run)
        if decoded is None:
            return m[0]
        inner = _Found()
        for step in _INNER_PASSES:
            decoded = step(decoded, inner)
        if not inner and _USER_PASSWORD().fullmatch(decoded) is None:
            return m[0]
        found.append("base64-credential")
        return mask("base64-credential")

    return _sub(_BASE64_RUN(), replace, text, found)


# The rest of a masked value that a line break cut off (`token: BiEVf` and, on the next line,
# `Y0DptkW5FJgDf0vRYt8…`): a lone token-like run right after the break joins the mask.
_CONTINUED = lazy(
    r"(?P<mask>\[REDACTED:[a-z0-9\-]{1,40}+\])(?P<gap>\r?\n[ \t]{0,8}+)"
    r"(?P<rest>[A-Za-z0-9_\-+/=.]{8,512}+)(?=[\s。，,;)\]'\"`]|$)"
)


@_gated(("[REDACTED:",))
def _continued(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        rest = m["rest"]
        if not tokenish(rest) or not any(c.isdigit() for c in rest) or _is_code(rest):
            return m[0]
        return m["mask"] + m["gap"] + m["mask"]

    return _sub(_CONTINUED(), replace, text, found)


_MEDIA_DATA_URI = lazy(MEDIA_DATA_URI)


# The entropy net: long base64/hex-ish runs that look random (`huiyi.safety.entropy`).
def _high_entropy(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        before = text[max(0, m.start() - 64) : m.start()]
        if _MEDIA_DATA_URI().search(before) or _PUBLIC_ID_PARAM().search(before[-24:]):
            return m[0]
        if not looks_secret(m[0], before[-24:], 24):
            return m[0]
        found.append("high-entropy")
        return mask("high-entropy")

    return _sub(LONG_RUN, replace, text, found)


_PASSES: list[_Pass] = [
    _pem,
    _split_tokens,  # before the vendor passes: a token cut by a line break is masked whole
    *_VENDOR_PASSES,
    _prefixed,
    _bearer,
    _authorization,
    _url_password,
    _query_secret,
    _url_token,
    _cli_credentials,
    _xml_elements,
    _markdown_tables,
    _named_value,
    _base64_credentials,
    _assignment,
    _high_entropy,
    _continued,
]
#: What `_base64_credentials` runs on a decoded run.
_INNER_PASSES: list[_Pass] = [
    *_VENDOR_PASSES,
    _prefixed,
    _bearer,
    _authorization,
    _url_password,
    _cli_credentials,
    _assignment,
]


def _scan(text: str, found: _Found) -> str:
    """Every pass over `text`; with `found.edits` set, `_Regions` of what changed."""
    for run in _PASSES:
        if found.edits is not None:
            found.edits = []
        before = text
        text = run(text, found)
        if found.edits and found.regions is not None:
            found.regions.apply(found.edits, before)
        if found and found[-1] == "private-key" and text == mask("private-key"):
            break
    return text


class _Regions:
    """What the passes changed, as spans of the current text and of the text first scanned.

    Outside the regions the current text is the first one, shifted; a pass's edit that
    touches a region absorbs it, so a mask that grows over an earlier mask maps back to both."""

    __slots__ = ("spans",)

    def __init__(self) -> None:
        #: (start, end) in the current text, (start, end) in the text first scanned
        self.spans: list[tuple[int, int, int, int]] = []

    def apply(self, edits: list[tuple[int, int, str]], text: str) -> None:
        """Carry the regions over the edits one pass made to `text` (sorted, apart)."""
        old = self.spans
        new: list[tuple[int, int, int, int]] = []
        i = 0
        shift = 0  # how much longer the new text is than the old, so far
        delta = 0  # how much longer the old text is than the first, before position i
        for start, end, replacement in edits:
            while i < len(old) and old[i][1] <= start and not old[i][0] == start == end:
                cs, ce, vs, ve = old[i]
                new.append((cs + shift, ce + shift, vs, ve))
                delta += (ce - cs) - (ve - vs)
                i += 1
            v_start = start - delta
            inside: int | None = None  # the first text's end of a region `end` falls in
            lo, hi = start, end
            while i < len(old) and old[i][0] < end:
                cs, ce, vs, ve = old[i]
                v_start = min(v_start, vs)
                delta += (ce - cs) - (ve - vs)
                lo, hi = min(lo, cs), max(hi, ce)
                inside = ve if end <= ce else None
                i += 1
            v_end = inside if inside is not None else max(v_start, end - delta)
            # an edit that cuts into a region takes the whole region along
            replacement = text[lo:start] + replacement + text[end:hi]
            new.append((lo + shift, lo + shift + len(replacement), v_start, v_end))
            shift += len(replacement) - (hi - lo)
        new.extend((cs + shift, ce + shift, vs, ve) for cs, ce, vs, ve in old[i:])
        self.spans = new

    def current(self, first: int) -> int | None:
        """Where position `first` of the text first scanned is in the current text, or None
        when an edit replaced it."""
        shift = 0
        for cs, ce, vs, ve in self.spans:
            if ve <= first and not vs == ve == first:
                shift += (ce - cs) - (ve - vs)
            elif vs <= first < ve:
                return None
            else:
                break
        return first + shift


def _rescan(text: str, found: _Found) -> str:
    """`_scan` until nothing changes: a mask can expose a new shape (a key whose value was
    glued to a masked run), in practice once more."""
    masked = _scan(text, found)
    before = 0
    for _ in range(3):
        if len(found) == before:
            break
        before = len(found)
        masked = _scan(masked, found)
    return masked


def _view(text: str) -> View:
    """The text as redaction reads it: `normalise.view` keeping case, with no-break spaces
    inside a token joined (a line break inside one is `_split_tokens`' to judge)."""
    if text.isascii() and "&" not in text and "%" not in text:
        return View(text, text, None, None)
    return view(text, casefold=False, joins=TOKEN_SPACES)


def _with_dropped(seen: View, vs: int, ve: int, start: int, end: int, done: int) -> tuple[int, int]:
    """The span of the original a mask of `seen.text[vs:ve]` covers, with what the view
    dropped right around it (an escaped control character, `&#31;`, `%1f`, a zero-width
    space): a password holding one is masked whole, not up to it."""
    if seen.starts is None or seen.ends is None or vs >= ve:
        return start, end
    before = seen.ends[vs - 1] if vs > 0 else 0
    after = seen.starts[ve] if ve < len(seen.starts) else len(seen.source)
    return max(done, min(start, before)), max(end, after)


def redact(text: str) -> Redacted:
    """Mask every known secret shape in `text`; `count` is the number of masks put in.

    The passes read `text` through the normaliser (`_view`: entities and escapes decoded,
    compatibility forms and look-alikes folded, invisible characters dropped, split tokens
    joined); each mask replaces exactly the characters of the original that the masked part of
    the view came from, and the rest of the original is kept as it was, without its invisible
    characters. Idempotent: `redact(redact(t).text)` returns the same text with a count of 0.
    """
    if len(text) > MAX_FIELD_CHARS:
        return Redacted(mask("oversized"), 1)
    seen = _view(text)
    found = _Found()
    if seen.same:
        return Redacted(_rescan(text, found), len(found))
    found.edits = []
    regions = found.regions = _Regions()
    found.view = seen
    masked = _rescan(seen.text, found)
    out: list[str] = []
    done = 0
    for cs, ce, vs, ve in regions.spans:
        start, end = seen.span(vs, ve)
        if start < done:
            continue  # two regions from one character of the original (an entity)
        start, end = _with_dropped(seen, vs, ve, start, end, done)
        out.append(strip_invisible(text[done:start]))
        out.append(masked[cs:ce])
        done = max(done, end)
    out.append(strip_invisible(text[done:]))
    return Redacted("".join(out), len(found))


#: texts up to this long are kept with their redaction (`redact_kept`), this many of them
KEPT_CHARS = 8_192
KEPT_TEXTS = 4_096


@functools.lru_cache(maxsize=KEPT_TEXTS)
def _kept(text: str) -> Redacted:
    return redact(text)


def redact_kept(text: str) -> Redacted:
    """`redact`, remembering the answers for the most recent short texts: a server answering
    many searches redacts the same titles and passages again and again (the newest rows are
    most searches' hits). `redact` depends on the text alone, so what is remembered is what it
    would give; a text over `KEPT_CHARS` is redacted afresh, so memory stays bounded."""
    return _kept(text) if len(text) <= KEPT_CHARS else redact(text)


def redact_many(texts: Iterable[str]) -> tuple[list[str], int]:
    """Redact several fields (a title, snippets, lines) and total their masks."""
    out: list[str] = []
    total = 0
    for text in texts:
        result = redact(text)
        out.append(result.text)
        total += result.count
    return out, total


def secret_families(text: str) -> list[str]:
    """Names of the secret families found in `text`, each once, in the order first found."""
    found = _Found()
    seen = _view(text)
    if not seen.same:  # tracked, so a pass can tell what an escape decoded to
        found.edits, found.regions, found.view = [], _Regions(), seen
    _scan(seen.text, found)
    return list(dict.fromkeys(found))
