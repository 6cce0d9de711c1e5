"""What stands where a secret would and is none: placeholders, variable references, code and
public ids.

A rule table for `huiyi.safety.redact`. Exempt are only exact placeholders (`YOUR_API_KEY`,
`CHANGEME`, `<your-token>`) and complete variable references (`$TOKEN`, `${TOKEN}`,
`os.environ["TOKEN"]`); `password=$hunter2` is still a secret, because only an UPPER_CASE name
counts after a bare `$`. Besides those, a few shapes of code (a call, an attribute path, a
keyword, a type annotation) and of public ids (a video id in a URL, an image in a data URI)
tell that a value behind a secret's name, or a random-looking run, is no secret. Patterns are
source text, linear-time like every pattern of `redact`, which compiles them on first use.
"""

from __future__ import annotations

__all__ = [
    "ATTRIBUTE_PATH",
    "CODE_REF",
    "CODE_WORDS",
    "MEDIA_DATA_URI",
    "PLACEHOLDER_SHAPE",
    "PLACEHOLDER_WORDS",
    "PUBLIC_ID_PARAM",
    "TYPE_NAMES",
    "VAR_REF",
]

#: Values that are placeholders whatever their case.
PLACEHOLDER_WORDS = frozenset(
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
#: Shapes of placeholders (matched without regard to case).
PLACEHOLDER_SHAPE = (
    # xxx, sk-xxxx, ***, ..., •••: input that was masked by hand
    r"(?:[a-z0-9]{1,12}+[_\-]){0,3}x{3,}+|\*{3,}+|\.{3,}+|…|•{3,}+"
    r"|<[A-Za-z][A-Za-z0-9 _.\-]{0,40}+>"  # <your-token>, <API_KEY>
    r"|your[_\- ]?[a-z0-9_\- ]{0,40}+"  # YOUR_API_KEY, your-api-key-here
    r"|(?:insert|enter|put|replace)[_\- ][a-z0-9_\- ]{0,40}+"  # INSERT_KEY_HERE
)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]{0,127}+"
#: Complete references to a variable, in shells, templates and code. Its back-references
#: number its own groups: it goes last in a pattern it is joined into.
VAR_REF = (
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

#: Words that follow `key:` / `key =` in code, where no value is: `if not token: raise`,
#: `secret = await vault.read()`.
CODE_WORDS = frozenset(
    {
        "raise", "return", "await", "yield", "not", "and", "or", "if", "else", "elif", "pass",
        "continue", "break", "lambda", "del", "assert", "import", "from", "in", "is", "async",
        "new", "throw", "typeof", "void", "delete", "function", "self", "this", "then", "do",
    }
)  # fmt: skip
#: Type names after `key:` are annotations (`token: str`), not values.
TYPE_NAMES = frozenset(
    {"str", "bytes", "int", "bool", "string", "number", "boolean", "any", "SecretStr", "None"}
)
#: A call or an index in code (`get_token()`, `row["token"]`, `tokens[0]`): the value stops
#: at the bracket, and what is left is a name, not a secret.
CODE_REF = r"[A-Za-z_][A-Za-z0-9_.]{0,127}+(?:\(|\[[A-Za-z0-9_]{0,40}+)"
#: An attribute path in code (`settings.api_key`, `self.token`): names, not a value.
ATTRIBUTE_PATH = r"[a-z_][A-Za-z_]{0,63}+(?:\.[a-z_][A-Za-z_]{0,63}+){1,8}+"

#: Query parameters whose values are public ids (YouTube's `v`, `list`, `si`; tracking tags),
#: matched without regard to case at the end of the text before a value.
PUBLIC_ID_PARAM = r"[?&](?:v|list|si|index|feature|pp|ref|fbclid|gclid|utm_[a-z]{1,20})=$"
#: A data URI of an image, a font or a sound: its base64 is a picture, not a secret.
MEDIA_DATA_URI = r"data:(?:image|font|audio|video)/[\w.+\-]{1,40}+;base64,$"
