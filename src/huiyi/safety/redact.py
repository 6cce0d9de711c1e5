"""Mask known secret shapes in text before it leaves the index.

Every text huiyi shows to an agent or a person (tool results, hook output, CLI, web page,
titles, error messages) goes through `redact` first, and only then is shortened, folded or
cut into snippets, so a secret can never be half-masked by a cut. The memory-write threat
scanner uses `secret_families` to refuse hard-coded secrets.

Redaction is defence in depth, not a vault: it recognises shapes (vendor prefixes, key=value
assignments, URL credentials, PEM blocks, long random-looking strings), and a secret that
looks like prose gets through. `docs/redaction.md` lists what is and is not covered.

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
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from huiyi.safety.entropy import LONG_RUN, looks_secret, tokenish

__all__ = [
    "MAX_FIELD_CHARS",
    "Redacted",
    "mask",
    "redact",
    "redact_many",
    "secret_families",
]

#: A field longer than this is masked whole: scanning it is not worth the risk of a miss.
MAX_FIELD_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class Redacted:
    """Redacted text and how many masks were put into it."""

    text: str
    count: int


def mask(family: str) -> str:
    """The replacement for one secret of `family`: short, deterministic, and inert."""
    return f"[REDACTED:{family}]"


_MASK = re.compile(r"\[REDACTED:[a-z0-9\-]{1,40}\]")


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

_PLACEHOLDER_WORDS = frozenset(
    {
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "redacted",
        "secret_here",
        "token_here",
        "password_here",
        "api_key_here",
        "null",
        "none",
        "nil",
        "undefined",
        "true",
        "false",
    }
)
_PLACEHOLDER_SHAPE = (
    # xxx, sk-xxxx, ***, ..., •••: input that was masked by hand
    r"(?:[a-z0-9]{1,12}+[_\-]){0,3}x{3,}+|\*{3,}+|\.{3,}+|…|•{3,}+"
    r"|<[A-Za-z][A-Za-z0-9 _.\-]{0,40}+>"  # <your-token>, <API_KEY>
    r"|your[_\- ]?[a-z0-9_\- ]{0,40}+"  # YOUR_API_KEY, your-api-key-here
    r"|(?:insert|enter|put|replace)[_\- ][a-z0-9_\- ]{0,40}+"  # INSERT_KEY_HERE
)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]{0,127}+"
_VAR_REF = (
    r"\$[A-Z_][A-Z0-9_]{0,127}+"  # $TOKEN: an env-var name, UPPER_CASE only
    rf"|\$\{{{_IDENT}\}}"  # ${TOKEN}, ${token}
    r"|\$?\{\{[ \t]{0,8}+[A-Za-z_][A-Za-z0-9_.]{0,127}+[ \t]{0,8}+\}\}"  # {{ secrets.X }}
    r"|\{[A-Za-z_][A-Za-z0-9_.]{0,127}+\}"  # {token}, {config.api_key} in an f-string
    rf"|%{_IDENT}%"  # %TOKEN% (Windows)
    rf"|os\.environ\[[ \t]{{0,8}}+([\"']){_IDENT}\1[ \t]{{0,8}}+\]"
    rf"|(?:os\.environ\.get|os\.getenv)\([ \t]{{0,8}}+([\"']){_IDENT}\2[ \t]{{0,8}}+\)"
    rf"|process\.env\.{_IDENT}"
    rf"|process\.env\[[ \t]{{0,8}}+([\"']){_IDENT}\3[ \t]{{0,8}}+\]"
    rf"|ENV\[[ \t]{{0,8}}+([\"']){_IDENT}\4[ \t]{{0,8}}+\]"
)


# One pattern for every exemption; the var-ref part comes last because its back-references
# count its own groups.
_EXEMPT = re.compile(rf"{_MASK.pattern}|(?i:{_PLACEHOLDER_SHAPE})|{_VAR_REF}")


_QUOTES_AND_SPACE = frozenset("\"'` \t\n")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    if value[:1] in ('"', "'", "`"):
        return value[1:]
    return value


def _is_exempt(value: str) -> bool:
    """True for values that are not secrets: empty, already masked, a placeholder, or a
    complete variable reference. `$hunter2` is not a reference: only UPPER_CASE env names
    count after a bare `$`."""
    inner = _unquote(value.strip()).strip() if value[:1] in _QUOTES_AND_SPACE else value
    if not inner:
        return True
    if inner.lower() in _PLACEHOLDER_WORDS or _EXEMPT.fullmatch(inner) is not None:
        return True
    # already masked, give or take an escaped newline (`"[REDACTED:private-key]\\n"`)
    return "[REDACTED:" in inner and not _MASK.sub("", inner).replace("\\n", "").strip()


# --------------------------------------------------------------------------------------------
# The passes.
# --------------------------------------------------------------------------------------------

_Found = list[str]
_Pass = Callable[[str, _Found], str]


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
    regex = re.compile(pattern)

    @_gated(needles)
    def run(text: str, found: _Found) -> str:
        def replace(m: re.Match[str]) -> str:
            if _is_exempt(m[0]) or (check is not None and not check(m[0])):
                return m[0]
            found.append(family)
            return mask(family)

        return regex.sub(replace, text)

    return run


def _body_not_placeholder(prefix_len: int) -> Callable[[str], bool]:
    def check(token: str) -> bool:
        body = token[prefix_len:]
        return not _is_exempt(body) and len(set(body)) > 3

    return check


def _sk_check(token: str) -> bool:
    body = token[3:]
    return not _is_exempt(body) and tokenish(body) and len(set(body)) > 3


# Vendor prefixes. Look-behinds keep a prefix from matching inside a longer word; where the
# body's characters include the prefix's, the look-behind spans the body's class too, so a
# repeated prefix cannot make the engine rescan one run from every offset.
_A = "(?<![A-Za-z0-9])"
_GITLAB = (
    "glpat", "gldt", "glrt", "glrtr", "glptt", "glft", "glsoat", "glimt", "glagent", "glcbt",
    "glffct", "gloas", "glwt",
)  # fmt: skip
_VENDOR_PASSES: list[_Pass] = [
    _simple(
        "anthropic",
        _A + r"sk-ant-(?:[a-z]{2,8}\d{0,3}-)?[A-Za-z0-9_\-]{20,}+",
        None,
        ("sk-ant-",),
    ),
    _simple(
        "sk-key",
        r"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}+",
        _sk_check,
        ("sk-",),
    ),
    _simple(
        "stripe",
        _A + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}+|" + _A + r"whsec_[A-Za-z0-9]{20,}+",
        _body_not_placeholder(8),
        ("_live_", "_test_", "whsec_"),
    ),
    _simple(
        "github",
        _A + r"(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+)",
        _body_not_placeholder(4),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _simple(
        "gitlab",
        _A
        + "(?:"
        + "|".join(_GITLAB)
        + r")-[A-Za-z0-9_\-.]{16,}+|"
        + _A
        + r"GR1348941[A-Za-z0-9_\-]{16,}+",
        _body_not_placeholder(6),
        (*(f"{prefix}-" for prefix in _GITLAB), "GR1348941"),
    ),
    _simple(
        "aws-key-id",
        _A + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        _body_not_placeholder(4),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    _simple(
        "slack",
        _A + r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}+"
        r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,}+",
        _body_not_placeholder(5),
        ("xox", "xapp-", "hooks.slack.com/"),
    ),
    _simple(
        "google",
        _A + r"(?:AIza[A-Za-z0-9_\-]{30,}+|GOCSPX-[A-Za-z0-9_\-]{20,}+|ya29\.[A-Za-z0-9_\-]{20,}+)",
        _body_not_placeholder(4),
        ("AIza", "GOCSPX-", "ya29."),
    ),
    _simple("huggingface", _A + r"hf_[A-Za-z0-9]{30,}+", _body_not_placeholder(3), ("hf_",)),
    _simple("npm", _A + r"npm_[A-Za-z0-9]{30,}+", _body_not_placeholder(4), ("npm_",)),
    _simple(
        "pypi",
        r"(?<![A-Za-z0-9_\-])pypi-[A-Za-z0-9_\-]{40,}+",
        _body_not_placeholder(5),
        ("pypi-",),
    ),
    _simple(
        "sendgrid",
        r"(?<![A-Za-z0-9_\-.])SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+",
        _body_not_placeholder(3),
        ("SG.",),
    ),
    _simple("groq", _A + r"gsk_[A-Za-z0-9]{20,}+", _body_not_placeholder(4), ("gsk_",)),
    _simple("xai", _A + r"xai-[A-Za-z0-9]{20,}+", _body_not_placeholder(4), ("xai-",)),
    _simple("telegram", _A + r"\d{6,12}+:AA[A-Za-z0-9_\-]{30,}+", None, (":AA",)),
    _simple(
        "jwt",
        r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*+",
        None,
        ("eyJ",),
    ),
]


# PEM private keys: a whole block, or the whole field when a block is unclosed or mismatched.
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]++ ){0,3})PRIVATE KEY( BLOCK)?-----", re.I)
_PEM_END = re.compile(r"-----END ((?:[A-Z0-9]++ ){0,3})PRIVATE KEY( BLOCK)?-----", re.I)


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
        begin = _PEM_BEGIN.search(text, pos)
        stop = begin.start() if begin else len(text)
        if _PEM_END.search(text, pos, stop):
            found.append("private-key")
            return whole
        if begin is None:
            out.append(text[pos:])
            return "".join(out)
        end = _PEM_END.search(text, begin.end())
        if (
            end is None
            or _pem_kind(end) != _pem_kind(begin)
            or _PEM_BEGIN.search(text, begin.end(), end.start())
        ):
            found.append("private-key")
            return whole
        out.append(text[pos : begin.start()])
        out.append(whole)
        found.append("private-key")
        pos = end.end()


# Bearer tokens and Authorization headers.
_BEARER = re.compile(
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

    return _BEARER.sub(replace, text)


_AUTH_SCHEMES = _ci(
    "bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "api-key", "key", "bot",
    "oauth", "ssws",
)  # fmt: skip
_AUTH_SCHEME_WORD = re.compile(_AUTH_SCHEMES)
_VALUE_SPECIAL = (
    r"\[(?:REDACTED|redacted):[a-z0-9\-]{1,40}\]"
    r"|\$?\{\{[^{}\n]{0,200}+\}\}"
    r"|\$\{[A-Za-z_][A-Za-z0-9_]{0,127}+\}"
    r"|\{[A-Za-z_][A-Za-z0-9_.]{0,127}+\}"
)
_AUTHORIZATION = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<head>"
    + _ci("proxy-authorization", "authorization")
    + r"[\"']?[ \t]*+(?:=>|[:=])[ \t]*+(?:[fbr]?[\"'])?[ \t]*+"
    + rf"(?:{_AUTH_SCHEMES}[ \t]++)?)"
    rf"(?P<value>{_VALUE_SPECIAL}|[^\s\"'`,;]++)"
)


@_gated(("authorization",), fold=True)
def _authorization(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        value = m["value"]
        if _is_exempt(value) or _AUTH_SCHEME_WORD.fullmatch(value):
            return m[0]
        if not (tokenish(value) or len(value) >= 16 or _MASK.fullmatch(value)):
            return m[0]  # prose: "the Authorization: header"
        found.append("authorization")
        return m["head"] + mask("authorization")

    return _AUTHORIZATION.sub(replace, text)


# URLs: passwords in user:password@host, secret query parameters, random path segments.
_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,31}+://"
    r"[^\s:/?#@'\"<>\[\]]{0,256}+:)(?P<value>[^\s/?#@'\"<>]{1,1024}+)@"
)


@_gated(("://",))
def _url_password(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        if _is_exempt(m["value"]):
            return m[0]
        found.append("url-password")
        return m["head"] + mask("url-password") + "@"

    return _URL_PASSWORD.sub(replace, text)


_QUERY_NAMES = _ci(
    "access_token", "refresh_token", "id_token", "auth_token", "session_token", "token",
    "client_secret", "api_key", "api-key", "apikey", "key", "secret", "password", "passwd", "pwd",
    "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    "x-goog-signature", "x-goog-credential",
)  # fmt: skip
_QUERY_SECRET = re.compile(rf"(?P<head>[?&;]{_QUERY_NAMES}=)(?P<value>[^&#\s'\"<>`]++)")


@_gated(("=",))
def _query_secret(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        if _is_exempt(m["value"]):
            return m[0]
        found.append("query-secret")
        return m["head"] + mask("query-secret")

    return _QUERY_SECRET.sub(replace, text)


_URL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}+://[^\s'\"<>`]++")
_URL_SEGMENT = re.compile(r"(?<![A-Za-z0-9_\-~+])[A-Za-z0-9_\-~+]{20,}+")


@_gated(("://",))
def _url_token(text: str, found: _Found) -> str:
    def replace_url(m: re.Match[str]) -> str:
        url = m[0]

        def replace_segment(s: re.Match[str]) -> str:
            if _is_exempt(s[0]) or not looks_secret(s[0], url[: s.start()], 20):
                return s[0]
            found.append("url-token")
            return mask("url-token")

        # the host is never a secret
        start = url.find("://") + 3
        slash = url.find("/", start)
        if slash < 0:
            return url
        return url[:slash] + _URL_SEGMENT.sub(replace_segment, url[slash:])

    return _URL.sub(replace_url, text)


# Assignments: key kept, value masked, in env, YAML, JSON, dotted-config and header form.
# The match starts at the secret word that ends the key (`password` in `DB_PASSWORD`,
# `Secret` in `clientSecret`), so non-secret keys never consume text, and the rest of the key
# is read back from the text before it.
_CJK_KEYS = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌")
_KEY_QUALIFIERS = (
    "api", "access", "secret", "private", "auth", "signing", "encryption", "master", "client",
    "app", "service", "account", "webhook", "license",
)  # fmt: skip
# The pattern runs on ASCII-lower-cased text (same length, so spans carry over to the
# original): a plain literal alternation lets `re` skip ahead by first character instead of
# trying every branch at every offset. The value is then read from the original text.
_ASSIGNMENT = re.compile(
    r"(?:(?P<key>(?:passwd|password|passphrase|pass|pwd|client[_\-]?secret|secret"
    r"|credentials|credential|token|(?:" + "|".join(_KEY_QUALIFIERS) + r")[_\-]?key)"
    r"(?:[_\-](?:base|value))?)(?![a-z0-9_.\-])[\"']?"
    r"|(?P<cjk_key>" + "|".join(_CJK_KEYS) + "))"
    r"(?P<sep>[ \t]{0,16}+(?:=>|:=|==|[:=：])[ \t]{0,16}+)"
    rf"(?P<value>{_VALUE_SPECIAL}"
    r"|(?:os\.environ|os\.getenv|process\.env|env)[^\s,;)}\]]{0,160}+[)\]]?"
    r"|\"(?:[^\"\\\n]|\\.)*+\"?"
    r"|'(?:[^'\\\n]|\\.)*+'?"
    r"|[^\s'\"`,;)}\]，。；、）】」]++)"
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
#: A call or an index in code (`get_token()`, `row["token"]`, `tokens[0]`): the value stops
#: at the bracket, and what is left is a name, not a secret.
_CODE_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}+(?:\(|\[[A-Za-z0-9_]{0,40}+)")
#: Type names after `key:` are annotations (`token: str`), not values.
_TYPE_NAMES = frozenset(
    {"str", "bytes", "int", "bool", "string", "number", "boolean", "any", "SecretStr", "None"}
)


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


@_gated(("pass", "pwd", "secret", "credential", "token", "key", *_CJK_KEYS), fold=True)
def _assignment(text: str, found: _Found) -> str:
    out: list[str] = []
    done = 0
    folded = text.translate(_ASCII_LOWER)
    for m in _ASSIGNMENT.finditer(folded):
        start = m.start()
        word = m["key"]
        if word is not None and start > 0:
            # the secret word must start the key or one of its words: `DB_PASSWORD`,
            # `dbPassword`, not `bypass` or `SMTPPASS`
            before = text[start - 1]
            if (before.isascii() and before.isalnum()) or before == "$":
                if not ((before.islower() or before.isdigit()) and text[start].isupper()):
                    continue
            elif word == "pwd" and before not in "_.-":
                continue  # $PWD is the working directory, not a password
        elif word == "pwd":
            continue
        v_start, v_end = m.span("value")
        value = text[v_start:v_end]
        if _is_exempt(value) or _CODE_REF.fullmatch(value):
            continue
        if value in _TYPE_NAMES and ":" in m["sep"]:
            continue
        if word is None:
            family = _assignment_family(m["cjk_key"], False)
        else:
            # `aws_secret_access_key`: the key's start lies within the 64 characters before
            aws = ("secret" in word or "key" in word) and "aws" in folded[start - 64 : start]
            family = _assignment_family(word, aws)
        if family != "password" and len(value) <= 4 and value.isdigit():
            continue  # MAX_TOKEN = 64: a setting, not a secret
        found.append(family)
        quote = value[0] if value[0] in "\"'`" else ""
        close = quote if quote and len(value) > 1 and value[-1] == quote else ""
        out.append(text[done:v_start])
        out.append(f"{quote}[REDACTED:{family}]{close}")
        done = v_end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


# The entropy net: long base64/hex-ish runs that look random (`huiyi.safety.entropy`).
def _high_entropy(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        if not looks_secret(m[0], text[max(0, m.start() - 24) : m.start()], 24):
            return m[0]
        found.append("high-entropy")
        return mask("high-entropy")

    return LONG_RUN.sub(replace, text)


_PASSES: list[_Pass] = [
    _pem,
    *_VENDOR_PASSES,
    _bearer,
    _authorization,
    _url_password,
    _query_secret,
    _url_token,
    _assignment,
    _high_entropy,
]


def _scan(text: str) -> tuple[str, list[str]]:
    if len(text) > MAX_FIELD_CHARS:
        return mask("oversized"), ["oversized"]
    found: list[str] = []
    for run in _PASSES:
        text = run(text, found)
        if found and found[-1] == "private-key" and text == mask("private-key"):
            break
    return text, found


def redact(text: str) -> Redacted:
    """Mask every known secret shape in `text`; `count` is the number of masks put in.

    Idempotent: `redact(redact(t).text)` returns the same text with a count of 0. A mask can
    expose a new shape (a key whose value was glued to a masked run), so text that had
    secrets is scanned again until nothing changes (in practice once more).
    """
    masked, found = _scan(text)
    count = len(found)
    for _ in range(3):
        if not found:
            break
        masked, found = _scan(masked)
        count += len(found)
    return Redacted(masked, count)


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
    return list(dict.fromkeys(_scan(text)[1]))
