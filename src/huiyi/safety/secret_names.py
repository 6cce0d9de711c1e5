"""The names that announce a secret: keys, query parameters, authorization schemes.

A rule table for `huiyi.safety.redact`: where a value sits behind one of these names (an
assignment `DB_PASSWORD=…`, a query parameter `?access_token=…`, an `Authorization: Basic …`
header, an XML `key="…Password" value="…"`), the value is masked and the name is kept. Word
lists are matched without regard to case; `redact` spells them into its patterns.
"""

from __future__ import annotations

__all__ = [
    "AUTH_SCHEMES",
    "CJK_KEYS",
    "GLUED_NAMES",
    "GLUED_WORDS",
    "KEY_QUALIFIERS",
    "QUERY_NAMES",
    "XML_SECRET_KEY",
]

#: Key words in Chinese, simplified and traditional (password, passphrase, secret key,
#: private key, token): an assignment to one of them is a secret like `password=`.
CJK_KEYS = ("密码", "密碼", "口令", "密钥", "密鑰", "秘钥", "秘鑰", "祕鑰", "私钥", "私鑰", "令牌")
#: Words that make a `key` a secret key (`api_key`, `signingKey`, `webhook-key`).
KEY_QUALIFIERS = (
    "api", "access", "secret", "private", "auth", "signing", "encryption", "master", "client",
    "app", "service", "account", "webhook", "license",
)  # fmt: skip
#: Upper-case environment names that glue a secret word onto a prefix (`PGPASSWORD`), and
#: whole names that do so with a shorter word.
GLUED_WORDS = frozenset({"password", "passwd", "token", "secret"})
GLUED_NAMES = frozenset({"SSHPASS"})

#: Schemes of an `Authorization:` value; the credential after one is masked, the scheme kept.
AUTH_SCHEMES = (
    "bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "api-key", "key", "bot",
    "oauth", "ssws",
)  # fmt: skip
#: Query parameters whose values are secrets.
QUERY_NAMES = (
    "access_token", "refresh_token", "id_token", "auth_token", "session_token", "token",
    "client_secret", "api_key", "api-key", "apikey", "key", "secret", "password", "passwd", "pwd",
    "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    "x-goog-signature", "x-goog-credential",
)  # fmt: skip
#: An XML `key` attribute that names a secret (matched case-insensitively, anywhere in the key).
XML_SECRET_KEY = r"pass(?:word|wd)?|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
