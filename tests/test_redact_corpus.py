# ruff: noqa: E501 (a data table: one line of a real session per entry reads best)
"""Redaction on ordinary coding-session text: code, logs, lockfiles and config that hold no
secret must come out unchanged. The count of lines masked is printed (`pytest -s`) and stated
in docs/redaction.md and the README; it must be 0."""

from __future__ import annotations

import re
from pathlib import Path

from huiyi.safety.redact import redact

ROOT = Path(__file__).resolve().parent.parent

#: Lines as they appear in coding sessions: none of them holds a secret.
ORDINARY: list[str] = [
    # Rust / cargo
    "   Compiling serde v1.0.197 (/home/me/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.197)",
    "/home/me/.cargo/registry/cache/index.crates.io-1949cf8c6b5b557f/serde_derive-1.0.197.crate",
    "target/debug/deps/libserde_derive-8d2a5b0f6c1e9f3a.so",
    "target/debug/build/openssl-sys-3b1f0a9e8c7d6b5a/out/include",
    "target/debug/.fingerprint/tokio-macros-0a1b2c3d4e5f6789/lib-tokio_macros.json",
    "/root/.cargo/git/checkouts/bevy-8a7b6c5d4e3f2a10/9f8e7d6/crates/bevy_ecs/src/lib.rs",
    # Python code that names secrets without holding one
    "    if not token: raise ValueError('missing token')",
    "    if password: raise AuthError('bad credentials')",
    "        token: return None",
    "def check(password: str, *, token: str | None = None) -> bool:",
    "    secret = await vault.read(path)",
    "api_key = settings.api_key or os.environ.get('API_KEY')",
    "export GITHUB_TOKEN=$(gh auth token)",
    "PASSWORD=`cat /run/secrets/db_password`",
    # logs
    "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
    "ERROR 1045 (28000): Access denied for user 'app'@'10.0.0.5' (using password: NO)",
    "2024-05-13T10:22:31.512Z INFO request_id=7f3a9c0e-12b4-4d68-9e1f-0a2b3c4d5e6f status=200 duration_ms=41",
    "WARN  [main] o.s.b.w.e.tomcat.TomcatWebServer : Tomcat started on port(s): 8080 (http)",
    "Traceback (most recent call last):\n  File \"/app/main.py\", line 12, in <module>\n    raise RuntimeError(\"token expired\")",
    # URLs
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG",
    "https://youtu.be/dQw4w9WgXcQ?si=Kx8Zp3QmV7rT2wYb",
    "https://github.com/org/app/actions/runs/9012345678/job/24771234567",
    "https://pypi.org/project/requests/2.31.0/",
    "https://docs.rs/tokio/latest/tokio/sync/struct.Mutex.html",
    # lockfiles and integrity strings
    '"integrity": "sha512-Qm9R8dT8x1a2ZZbBfmS/QN3AB1zL0Q3TzC7ahq3ThIhrSjwTh0Qq2dVDYhBi4bFymcO0wN0bDQxxdOQzk/BG5A==",',
    '  integrity sha1-7gHeg3dnmYvNSb6rIPzmY0oXX0I=',
    'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#679591c564c3bffaae8454cf0b3df370c3d6911c"',
    "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
    "github.com/stretchr/testify v1.8.4/go.mod h1:sz/lmYIOXD/1dqDmKjjqLyZ2RngseejIcXlSw2iwfAo=",
    "requests==2.31.0 --hash=sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f",
    "docker pull python@sha256:6a0b5c9d2e7f1a3b8c4d6e0f2a5b9c1d3e7f0a2b4c6d8e0f1a3b5c7d9e1f3a5b",
    # images and binary-ish text
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    "background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PC9zdmc+);",
    # config
    "max_tokens: 4096",
    "token_budget = 120000",
    "password_min_length: 12",
    "auth:\n  type: oauth2\n  token_url: https://auth.example.com/oauth/token",
    "secretName: app-tls",
    "valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password",
    "PASSWORD_RESET_TIMEOUT = 3600",
    # git and shell
    "commit 7999e1d3359715c523056ef9478215996d62a620 (HEAD -> main, origin/main)",
    "Merge: 1a2b3c4 5d6e7f8",
    "git rebase -i HEAD~3",
    "ssh-keygen -t ed25519 -C 'me@example.com' -f ~/.ssh/id_ed25519",
    "kubectl get secret db-credentials -o jsonpath='{.data.password}' | base64 -d",
    "curl -u admin https://example.com/api   # prompts for the password",
    "docker login -u ci --password-stdin registry.example.com",
    "mysql -u root -p app < dump.sql",
    # prose
    "The token bucket refills at 10 tokens per second; the secret is to keep bursts short.",
    "我们把密码策略改成了至少 12 位，令牌有效期 1 小时。",
    "Bearer tokens expire after an hour; refresh them with the refresh endpoint.",
]  # fmt: skip


def test_the_corpus_is_big_enough() -> None:
    assert len(ORDINARY) >= 40


def test_ordinary_session_text_has_no_false_positives() -> None:
    masked = [(line, redact(line).text) for line in ORDINARY if redact(line).count]
    print(f"\nordinary lines masked: {len(masked)}/{len(ORDINARY)}")
    for line, out in masked:
        print(f"  {line!r}\n  -> {out!r}")
    assert masked == []


def test_the_docs_state_the_false_positive_count() -> None:
    count = sum(1 for line in ORDINARY if redact(line).count)
    claim = f"{count} of {len(ORDINARY)} lines of ordinary code, logs and config"
    for doc in ("docs/redaction.md", "README.md"):
        text = re.sub(r"\s+", " ", (ROOT / doc).read_text(encoding="utf-8"))
        assert claim in text, f"{doc} should say {claim!r}"
