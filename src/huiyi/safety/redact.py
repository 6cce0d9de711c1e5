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
* Every pattern is compiled on its first use (`huiyi.text.lazyre`): compiled at import they
  cost about 25 ms in every process, and a pass whose needles never occur never needs its own.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable

from huiyi.safety.entropy import LONG_RUN, looks_secret, tokenish
from huiyi.safety.unicode import strip_invisible
from huiyi.text.lazyre import lazy

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
        "yes",
        "no",
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
_EXEMPT = lazy(rf"{_MASK_SOURCE}|(?i:{_PLACEHOLDER_SHAPE})|{_VAR_REF}")


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
    if inner.lower() in _PLACEHOLDER_WORDS or _EXEMPT().fullmatch(inner) is not None:
        return True
    # already masked, give or take an escaped newline (`"[REDACTED:private-key]\\n"`)
    return "[REDACTED:" in inner and not _MASK().sub("", inner).replace("\\n", "").strip()


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
    regex = lazy(pattern)

    @_gated(needles)
    def run(text: str, found: _Found) -> str:
        def replace(m: re.Match[str]) -> str:
            if _is_exempt(m[0]) or (check is not None and not check(m[0])):
                return m[0]
            found.append(family)
            return mask(family)

        return regex().sub(replace, text)

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
        _A + r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}+|" + _A + r"whsec_[A-Za-z0-9]{20,}+",
        _body_not_placeholder(8),
        ("_live_", "_test_", "_prod_", "whsec_"),
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


#: More vendor prefixes, from the public rule lists of gitleaks (config/gitleaks.toml) and the
#: Hermes agent (agent/redact.py): (family, pattern, needles). Each pattern starts at its
#: prefix and has no capturing group; one pass runs the families whose needles occur.
_PREFIXED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("digitalocean", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    (
        "square",
        r"sq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,60}+|EAAA[A-Za-z0-9_\-]{56,80}+",
        ("sq0", "EAAA"),
    ),
    ("perplexity", r"pplx-[A-Za-z0-9]{40,}+", ("pplx-",)),
    ("replicate", r"r8_[A-Za-z0-9]{30,}+", ("r8_",)),
    ("tavily", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,}+", ("tvly-",)),
    ("firecrawl", r"fc-[a-f0-9]{32}", ("fc-",)),
    ("browserbase", r"bb_live_[A-Za-z0-9_\-]{20,}+", ("bb_live_",)),
    ("notion", r"ntn_[A-Za-z0-9]{40,}+|secret_[A-Za-z0-9]{43}", ("ntn_", "secret_")),
    ("matrix", r"syt_[A-Za-z0-9_]{20,}+", ("syt_",)),
    ("fireworks", r"(?:fw|fpk)_[A-Za-z0-9]{20,}+", ("fw_", "fpk_")),
    ("elevenlabs", r"sk_[a-f0-9]{48}", ("sk_",)),
    ("zhipu", r"[0-9a-f]{32}\.[A-Za-z0-9]{16,}+", (".",)),
    (
        "1password",
        r"ops_eyJ[A-Za-z0-9+/]{100,}+={0,3}+"
        r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}",
        ("ops_eyJ", "A3-"),
    ),
    ("age", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET-KEY-1",)),
    ("airtable", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", ("pat",)),
    ("alibaba", r"LTAI[A-Za-z0-9]{20}", ("LTAI",)),
    ("artifactory", r"AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}", ("AKCp", "cmVmd")),
    ("atlassian", r"ATATT3[A-Za-z0-9_\-=]{150,}+", ("ATATT3",)),
    ("aws-bedrock", r"ABSK[A-Za-z0-9+/]{109,269}+={0,2}+", ("ABSK",)),
    ("azure", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}+", ("Q~",)),
    ("clojars", r"CLOJARS_[A-Za-z0-9]{60}", ("CLOJARS_",)),
    ("databricks", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    ("doppler", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+", ("dp.",)),
    ("duffel", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", ("duffel_",)),
    ("dynatrace", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    ("easypost", r"EZ[AT]K[A-Za-z0-9]{54}", ("EZAK", "EZTK")),
    ("facebook", r"EAA[MC][A-Za-z0-9]{100,}+", ("EAAM", "EAAC")),
    ("flutterwave", r"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}+(?:-X)?", ("FLWSECK",)),
    ("flyio", r"fo1_[\w\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}+={0,3}+", ("fo1_", "fm1", "fm2")),
    ("frameio", r"fio-u-[A-Za-z0-9\-_=]{64}", ("fio-u-",)),
    (
        "grafana",
        r"glc_[A-Za-z0-9+/]{32,}+={0,3}+|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|eyJrIjoi[A-Za-z0-9]{70,}+",
        ("glc_", "glsa_", "eyJrIjoi"),
    ),
    ("hashicorp", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70}+", (".atlasv1.",)),
    ("vault", r"hv[sb]\.[\w\-]{90,}+", ("hvs.", "hvb.")),
    ("heroku", r"HRKU-AA[0-9a-zA-Z_\-]{58}", ("HRKU-AA",)),
    ("huggingface", r"api_org_[A-Za-z]{34}", ("api_org_",)),
    ("infracost", r"ico-[A-Za-z0-9]{32}", ("ico-",)),
    ("linear", r"lin_api_[A-Za-z0-9]{40}", ("lin_api_",)),
    (
        "newrelic",
        r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}",
        ("NRAK-", "NRJS-", "NRII-"),
    ),
    ("openshift", r"sha256~[\w\-]{43}", ("sha256~",)),
    ("planetscale", r"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}+", ("pscale_",)),
    ("postman", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ("PMAK-",)),
    ("prefect", r"pnu_[A-Za-z0-9]{36}", ("pnu_",)),
    ("pulumi", r"pul-[a-f0-9]{40}", ("pul-",)),
    ("readme", r"rdme_[a-z0-9]{70}", ("rdme_",)),
    ("rubygems", r"rubygems_[a-f0-9]{48}", ("rubygems_",)),
    ("scalingo", r"tk-us-[\w\-]{48}", ("tk-us-",)),
    ("brevo", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}", ("keysib-", "smtpsib-")),
    ("sentry", r"sntrys_eyJ[A-Za-z0-9+/=_]{50,}+|sntryu_[a-f0-9]{64}", ("sntrys_", "sntryu_")),
    ("shippo", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_",)),
    ("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),
    ("twilio", r"SK[0-9a-fA-F]{32}", ("SK",)),
    ("typeform", r"tfp_[A-Za-z0-9_\-.=]{59,}+", ("tfp_",)),
    ("sourcegraph", r"sgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}", ("sgp_",)),
    ("cloudflare", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
)  # fmt: skip


@functools.lru_cache(maxsize=64)
def _prefixed_regex(indexes: tuple[int, ...]) -> re.Pattern[str]:
    branches = "|".join(f"(?P<f{i}>{_PREFIXED[i][1]})" for i in indexes)
    return re.compile(rf"(?<![A-Za-z0-9_\-.])(?:{branches})(?![A-Za-z0-9_\-])")


def _prefixed(text: str, found: _Found) -> str:
    present = tuple(
        i for i, (_, _, needles) in enumerate(_PREFIXED) if any(n in text for n in needles)
    )
    if not present:
        return text

    def replace(m: re.Match[str]) -> str:
        family = _PREFIXED[int((m.lastgroup or "f0")[1:])][0]
        if _is_exempt(m[0]) or len(set(m[0])) < 10:
            return m[0]
        found.append(family)
        return mask(family)

    return _prefixed_regex(present).sub(replace, text)


# PEM private keys: a whole block, or the whole field when a block is unclosed or mismatched.
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
            found.append("private-key")
            return whole
        if begin is None:
            out.append(text[pos:])
            return "".join(out)
        end = _PEM_END().search(text, begin.end())
        if (
            end is None
            or _pem_kind(end) != _pem_kind(begin)
            or _PEM_BEGIN().search(text, begin.end(), end.start())
        ):
            found.append("private-key")
            return whole
        out.append(text[pos : begin.start()])
        out.append(whole)
        found.append("private-key")
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

    return _BEARER().sub(replace, text)


_AUTH_SCHEMES = _ci(
    "bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "api-key", "key", "bot",
    "oauth", "ssws",
)  # fmt: skip
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
    + rf"(?:{_AUTH_SCHEMES}[ \t]++)?)"
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

    return _AUTHORIZATION().sub(replace, text)


# URLs: passwords in user:password@host, secret query parameters, random path segments.
_URL_PASSWORD = lazy(
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

    return _URL_PASSWORD().sub(replace, text)


_QUERY_NAMES = _ci(
    "access_token", "refresh_token", "id_token", "auth_token", "session_token", "token",
    "client_secret", "api_key", "api-key", "apikey", "key", "secret", "password", "passwd", "pwd",
    "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    "x-goog-signature", "x-goog-credential",
)  # fmt: skip
_QUERY_SECRET = lazy(rf"(?P<head>[?&;]{_QUERY_NAMES}=)(?P<value>[^&#\s'\"<>`]++)")


@_gated(("=",))
def _query_secret(text: str, found: _Found) -> str:
    def replace(m: re.Match[str]) -> str:
        if _is_exempt(m["value"]):
            return m[0]
        found.append("query-secret")
        return m["head"] + mask("query-secret")

    return _QUERY_SECRET().sub(replace, text)


_URL = lazy(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}+://[^\s'\"<>`]++")
_URL_SEGMENT = lazy(r"(?<![A-Za-z0-9_\-~+])[A-Za-z0-9_\-~+]{20,}+")
#: Query parameters whose values are public ids (YouTube's `v`, `list`, `si`; tracking tags).
_PUBLIC_ID_PARAM = lazy(
    r"[?&](?:v|list|si|index|feature|pp|ref|fbclid|gclid|utm_[a-z]{1,20})=$", re.IGNORECASE
)


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

    return _URL().sub(replace_url, text)


# Credentials on command lines and in credential files, where no `=` or `:` separates the
# secret from its name: `docker login -p …`, `sshpass -p …`, `mysql -p…`, `curl -u user:…`,
# `--password …`, netrc `password …` lines, `<add key="…Password" value="…"/>`.
_CLI_VALUE = r"(?P<value>\"[^\"\n]{1,512}+\"|'[^'\n]{1,512}+'|[^\s'\"\-<>|&;][^\s'\"]{0,511}+)"
_CLI_SHAPES: tuple[tuple[str, Callable[[], re.Pattern[str]], tuple[str, ...]], ...] = (
    (
        "password",
        lazy(
            r"\b(?:docker|podman|nerdctl|helm|skopeo|buildah|oras|crane|regctl)\b[^\n|;&]{0,160}?"
            r"\blogin\b[^\n|;&]{0,200}?[ \t](?:-p|--password)(?:[ \t]++|=)" + _CLI_VALUE
        ),
        ("login",),
    ),
    ("password", lazy(r"\bsshpass[ \t]++-p[ \t]*+" + _CLI_VALUE), ("sshpass",)),
    (
        "password",
        lazy(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?"
            r"[ \t]-p(?P<value>[^\s'\"\-][^\s'\"]{0,511}+)"
        ),
        ("mysql", "mariadb"),
    ),
    (
        "password",
        lazy(r"\bredis-cli\b[^\n|;&]{0,200}?[ \t]-a[ \t]++" + _CLI_VALUE),
        ("redis-cli",),
    ),
    (
        "password",
        lazy(
            r"\b(?:curl|http|https|xh)\b[^\n|;&]{0,200}?[ \t](?:-u[ \t]*+|--user(?:[ \t]++|=)|"
            r"-a[ \t]++|--auth(?:[ \t]++|=))[\"']?[^\s:\"'@]{0,128}+:(?P<value>[^\s\"'@]{1,512}+)"
        ),
        ("curl", "http", "xh"),
    ),
    (
        "cli-flag",
        lazy(
            r"(?<![\w-])--(?:[a-z0-9]{1,20}-){0,3}(?P<word>password|passwd|token|secret|api-key|"
            r"apikey|access-key|secret-key|client-secret)[ \t]++" + _CLI_VALUE
        ),
        ("--",),
    ),
    (
        "password",
        lazy(
            r"\bmachine[ \t]++\S{1,253}+(?:[ \t]++(?:login|account)[ \t]++\S{1,253}+){0,2}"
            r"[ \t]++password[ \t]++(?P<value>\S{1,512}+)"
            r"|(?m:^[ \t]*+password[ \t]++(?P<line>\S{1,512}+)[ \t]*+$)"
        ),
        ("machine",),
    ),
    (
        "xml",
        lazy(
            r"\b[Kk]ey[ \t]*+=[ \t]*+\"(?P<word>[^\"\n]{0,64}?)\"[ \t]++[Vv]alue[ \t]*+=[ \t]*+\""
            r"(?P<value>[^\"\n]{1,512}+)\""
        ),
        ("alue",),
    ),
)  # fmt: skip
_XML_SECRET_KEY = lazy(
    r"pass(?:word|wd)?|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key", re.I
)


def _cli_credentials(text: str, found: _Found) -> str:
    for family, regex, needles in _CLI_SHAPES:
        if not any(n in text for n in needles):
            continue

        def replace(m: re.Match[str], family: str = family) -> str:
            group = "line" if "line" in m.groupdict() and m["line"] is not None else "value"
            value = m[group]
            named = family
            if family == "cli-flag":
                if "=" in value:
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
            quote = value[0] if value[0] in "\"'" else ""
            close = quote if quote and value.endswith(quote) and len(value) > 1 else ""
            return (
                m[0][: start - m.start()] + f"{quote}{mask(named)}{close}" + m[0][end - m.start() :]
            )

        text = regex().sub(replace, text)
    return text


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
_ASSIGNMENT = lazy(
    r"(?:(?P<key>(?:passwd|password|passphrase|pass|pwd|client[_\-]?secret|secret"
    r"|credentials|credential|token|(?:" + "|".join(_KEY_QUALIFIERS) + r")[_\-]?key)"
    r"(?:[_\-](?:base|value))?)(?![a-z0-9_.\-])(?:\\{0,7}+[\"'])?"
    r"|(?P<cjk_key>" + "|".join(_CJK_KEYS) + "))"
    r"(?P<sep>[ \t]{0,16}+(?:=>|:=|==|[:=：])[ \t]{0,16}+)"
    rf"(?P<value>{_VALUE_SPECIAL}"
    r"|(?:os\.environ|os\.getenv|process\.env|env)[^\s,;)}\]]{0,160}+[)\]]?"
    r"|\\{1,7}+\"[^\"\\\n]{0,4096}+\\{1,7}+\""  # JSON inside a JSON string: \"secret\"
    r"|\"(?:[^\"\\\n]|\\.)*+\"?"
    r"|'(?:[^'\\\n]|\\.)*+'?"
    r"|[^\s'\"`,;)}\]，。；、）】」]++)"
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
#: A call or an index in code (`get_token()`, `row["token"]`, `tokens[0]`): the value stops
#: at the bracket, and what is left is a name, not a secret.
_CODE_REF = lazy(r"[A-Za-z_][A-Za-z0-9_.]{0,127}+(?:\(|\[[A-Za-z0-9_]{0,40}+)")
#: Type names after `key:` are annotations (`token: str`), not values.
_TYPE_NAMES = frozenset(
    {"str", "bytes", "int", "bool", "string", "number", "boolean", "any", "SecretStr", "None"}
)


_OPEN_QUOTE = lazy(r"\\{0,7}+[\"'`]")
#: Upper-case environment names that glue a secret word onto a prefix.
_GLUED_WORDS = frozenset({"password", "passwd", "token", "secret"})
_GLUED_NAMES = frozenset({"SSHPASS"})
#: Words that follow `key:` / `key =` in code, where no value is: `if not token: raise`,
#: `secret = await vault.read()`.
_CODE_WORDS = frozenset(
    {
        "raise", "return", "await", "yield", "not", "and", "or", "if", "else", "elif", "pass",
        "continue", "break", "lambda", "del", "assert", "import", "from", "in", "is", "async",
        "new", "throw", "typeof", "void", "delete", "function", "self", "this", "then", "do",
    }
)  # fmt: skip
#: An attribute path in code (`settings.api_key`, `self.token`): names, not a value.
_ATTRIBUTE_PATH = lazy(r"[a-z_][A-Za-z_]{0,63}+(?:\.[a-z_][A-Za-z_]{0,63}+){1,8}+")


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
    return word in _GLUED_WORDS or name in _GLUED_NAMES


def _is_code(value: str) -> bool:
    """A keyword, an attribute path or a command substitution where a value would be."""
    if value in _CODE_WORDS or value.startswith(("$(", "`")):
        return True
    return _ATTRIBUTE_PATH().fullmatch(value) is not None


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
        if _is_exempt(value) or _CODE_REF().fullmatch(value) or _is_code(value):
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
        quoted = _OPEN_QUOTE().match(value)
        quote = quoted[0] if quoted else ""
        close = quote if quote and len(value) > len(quote) and value.endswith(quote) else ""
        out.append(text[done:v_start])
        out.append(f"{quote}[REDACTED:{family}]{close}")
        done = v_end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


#: A data URI of an image, a font or a sound: its base64 is a picture, not a secret.
_MEDIA_DATA_URI = lazy(r"data:(?:image|font|audio|video)/[\w.+\-]{1,40}+;base64,$")


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

    return LONG_RUN.sub(replace, text)


_PASSES: list[_Pass] = [
    _pem,
    *_VENDOR_PASSES,
    _prefixed,
    _bearer,
    _authorization,
    _url_password,
    _query_secret,
    _url_token,
    _cli_credentials,
    _assignment,
    _high_entropy,
]


def _scan(text: str) -> tuple[str, list[str]]:
    if len(text) > MAX_FIELD_CHARS:
        return mask("oversized"), ["oversized"]
    # invisible characters go first: inside a token they would hide its shape
    # (`ghp_ab\u200bcd…`), and on their own they carry text a reader never sees
    text = strip_invisible(text)
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
