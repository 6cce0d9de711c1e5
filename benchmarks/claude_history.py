"""A generated Claude Code history with planted needles, for side-by-side recall benchmarks.

Writes `<claude_dir>/projects/<encoded cwd>/<session>.jsonl` in the on-disk format of Claude
Code 2.1 (`../shared/formats/claude-code.md`, `tests/clients/fixtures/`): typed prompts as
string content, replies split over one line per content block sharing `message.id`, `tool_use`
blocks answered by `tool_result` user records, `ai-title` records and the client's bookkeeping
lines, every record carrying `uuid`, `parentUuid`, `sessionId`, `cwd` and a timestamp within the
last 60 days (claude-recall searches 90 days by default; a history older than that would
measure nothing).

Filler (`chat_filler.py`) is Chinese, English and mixed chat about ordinary backend work as a
person and a coding agent write it: requests, short replies, pasted logs, the agent's line
before a tool call and its answers after (a fifth of them long summaries with a list and a code
block), tool output shaped like the tool's, from templates and slot words on the needles' own
topics (deploys, migrations, rollbacks, locks, tables, logins, releases). Each needle is one
message in its own session, found by one query of its kind. The needle's key words never occur
in the filler (no two-character Chinese word of a key word can be made of the filler's
characters, its English words are not in the filler's vocabulary), so a hit on the needle's
message is a hit on the needle, whichever tool ranks it. The filler does hold the typo
targets' neighbours (`subset`, `settings`, `config` ...), so the fuzzy layer meets many partial
matches, as in a real history. Needle sessions are drawn at random among all sessions, so they
lie anywhere in the 60 days.
"""

from __future__ import annotations

import json
import random
import re
import string
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chat_filler import VOCABULARY, Writer

VERSION = "2.1.332"


@dataclass(frozen=True)
class Needle:
    """One planted message and the query that should find it."""

    kind: str
    query: str
    text: str
    #: the secret the text holds; a hit must not show it
    secret: str | None = None
    role: str = "user"
    session_id: str = ""


@dataclass
class History:
    """What `write_history` wrote: the needles (with their sessions) and the counts."""

    cwd: str
    needles: list[Needle]
    messages: int
    sessions: int
    files: list[Path] = field(default_factory=list)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(n.kind for n in self.needles))


def _key(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def needles(rng: random.Random) -> list[Needle]:
    """Three needles of each kind; kinds where claude-recall is strong (exact words, phrases,
    identifiers, inflected English) sit beside those it was never built for."""
    stripe, openai, github = (
        "sk_live_" + _key(rng, 24),
        "sk-proj-" + _key(rng, 40),
        "ghp_" + _key(rng, 36),
    )
    return [
        Needle("english_word", "flamegraph", "the flamegraph showed most time in json decoding"),
        Needle(
            "english_word",
            "tombstoning",
            "we agreed on tombstoning deleted rows instead of hard deletes",
            role="assistant",
        ),
        Needle("english_word", "backpressure", "add backpressure to the websocket fan-out first"),
        Needle(
            "english_phrase",
            "why did we pin grpcio",
            "we pinned grpcio below 1.63 because its wheel segfaults on alpine",
            role="assistant",
        ),
        Needle(
            "english_phrase",
            "when does the invoices cron run",
            "the nightly cron for invoices now runs at 03:30 so it stops colliding with backups",
        ),
        Needle(
            "english_phrase",
            "replica starving vacuum",
            "postgres vacuum was starving the replica, so autovacuum_naptime went up to 5min",
            role="assistant",
        ),
        Needle(
            "code_identifier",
            "reconcile_ledger_batches",
            "reconcile_ledger_batches double-counts refunds when a batch spans midnight",
        ),
        Needle(
            "code_identifier",
            "useDebouncedCallback",
            "useDebouncedCallback in SearchBox.tsx fires twice under StrictMode",
            role="assistant",
        ),
        Needle(
            "code_identifier",
            "invoice_sync.py",
            "the bug is in src/billing/invoice_sync.py around line 212",
        ),
        Needle(
            "inflection",
            "throttled upload",
            "the exporter kept throttling uploads to the bucket overnight",
        ),
        Needle(
            "inflection",
            "deduplicate webhook delivery",
            "we deduplicated webhook deliveries by their event id",
            role="assistant",
        ),
        Needle(
            "inflection",
            "regenerate snapshot",
            "those flaky snapshots were regenerated after the font change",
        ),
        Needle("chinese_word", "熔断器", "昨天线上那个熔断器一直误报所以把阈值调高了"),
        Needle(
            "chinese_word",
            "灰度",
            "新版本先走灰度，百分之五的流量观察两天再全量",
            role="assistant",
        ),
        Needle("chinese_word", "幂等", "支付回调必须保证幂等否则会重复扣款"),
        Needle(
            "mixed",
            "kafka 消费者组",
            "把 kafka 消费者组的会话超时调到四十五秒",
            role="assistant",
        ),
        Needle("mixed", "nginx 反向代理", "nginx 的反向代理缓冲区太小导致大文件上传失败"),
        Needle("mixed", "pgbouncer 连接池", "用 pgbouncer 做连接池之后延迟降下来了"),
        Needle("typo", "subseting", "subsetting the font cut the bundle by 400kb"),
        Needle(
            "typo",
            "kubeconfg",
            "the kubeconfig on the runner still points at the old cluster",
            role="assistant",
        ),
        Needle("typo", "memoizaton", "memoization of the price lookup fixed the render storm"),
        Needle(
            "paraphrase",
            "sign-in screen turned sluggish once password hashing became stronger",
            "the login page got slow after we raised the bcrypt cost to 14",
        ),
        Needle(
            "paraphrase",
            "为什么礼拜五不能上线",
            "周五下午不要发版，出了问题没人值班",
            role="assistant",
        ),
        Needle(
            "paraphrase",
            "撤销昨天对表结构做的改动",
            "we rolled back yesterday's database migration because it locked the orders table",
        ),
        Needle(
            "secret",
            "STRIPE_SECRET_KEY",
            f"for staging use export STRIPE_SECRET_KEY={stripe} before running it",
            secret=stripe,
        ),
        Needle(
            "secret",
            "OPENAI_API_KEY",
            f"the eval job reads OPENAI_API_KEY={openai} from its env file",
            secret=openai,
            role="assistant",
        ),
        Needle(
            "secret",
            "GITHUB_TOKEN",
            f"the deploy bot pushes tags with GITHUB_TOKEN={github} set",
            secret=github,
        ),
    ]


_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[a-z0-9]+")


def _zh_chars(text: str) -> set[str]:
    return set(_CJK.findall(text))


def _en_words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _bigrams(text: str) -> set[str]:
    runs = re.findall(r"[\u4e00-\u9fff]+", text)
    return {run[i : i + 2] for run in runs for i in range(len(run) - 1)}


def check_needles(planted: list[Needle]) -> None:
    """Fail loudly when a needle could be matched by filler or when a paraphrase shares words
    with its target: either would make found@5 measure the generator, not the tools."""
    filler_zh = _zh_chars(VOCABULARY)
    filler_en = _en_words(VOCABULARY)
    for needle in planted:
        if needle.kind in ("paraphrase", "inflection", "english_phrase", "typo"):
            shared = (_en_words(needle.query) & _en_words(needle.text)) | (
                _bigrams(needle.query) & _bigrams(needle.text)
            )
            if needle.kind == "paraphrase" and shared:
                raise ValueError(f"paraphrase {needle.query!r} shares {sorted(shared)}")
            continue
        # filler may hold a needle's character, never one of its two-character words
        key_zh = {pair for pair in _bigrams(needle.query) if set(pair) <= filler_zh}
        key_en = {w for w in _en_words(needle.query) if len(w) > 3} & filler_en
        if key_zh or key_en:
            raise ValueError(f"needle {needle.query!r} occurs in filler: {key_zh | key_en}")


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name for a cwd (`/` and `.` become `-`)."""
    return re.sub(r"[/.:\\]", "-", cwd)


class _Session:
    """Builds one transcript: fills in the fields every real record carries."""

    def __init__(self, session_id: str, cwd: str, start: datetime, rng: random.Random) -> None:
        self.id, self.cwd, self.clock, self.rng = session_id, cwd, start, rng
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.messages = 0

    def _stamp(self) -> str:
        self.clock += timedelta(seconds=5)
        return _iso(self.clock)

    def uid(self) -> str:
        """An id drawn from the seeded generator: one seed writes the same sessions every time."""
        return uuid.UUID(int=self.rng.getrandbits(128), version=4).hex

    def add(self, record: dict[str, Any]) -> None:
        """A conversation record (user/assistant): chained by `parentUuid`, counted."""
        uid = str(uuid.UUID(self.uid()))
        self.records.append(
            {
                "parentUuid": self.parent,
                "isSidechain": False,
                "userType": "external",
                "entrypoint": "cli",
                "cwd": self.cwd,
                "sessionId": self.id,
                "version": VERSION,
                "gitBranch": "main",
                **record,
                "uuid": uid,
                "timestamp": self._stamp(),
            }
        )
        self.parent = uid
        self.messages += 1

    def note(self, record: dict[str, Any]) -> None:
        """A bookkeeping record of the client: no conversation, not counted."""
        self.records.append({**record, "sessionId": self.id})

    def prompt(self, text: str) -> None:
        self.add({"type": "user", "message": {"role": "user", "content": text}})
        self.note({"type": "last-prompt", "lastPrompt": text[:200], "leafUuid": self.parent})

    def reply(self, blocks: list[dict[str, Any]]) -> None:
        """One API reply, a line per content block sharing `message.id` (as Claude Code does)."""
        message_id = "msg_01" + self.uid()[:22]
        for block in blocks:
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
            }
            self.add({"type": "assistant", "message": message})

    def tool_result(self, tool_id: str, output: str) -> None:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        self.add({"type": "user", "message": {"role": "user", "content": [block]}})

    def lines(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records)


def _turn(session: _Session, writer: Writer) -> None:
    """A prompt, none to four tool calls (each with its result, most after a line saying what
    the agent is about to do), and the agent's answer."""
    rng = writer.rng
    session.prompt(writer.prompt())
    for call in range(rng.choices(range(5), weights=(20, 45, 20, 10, 5))[0]):
        tool, target, output = writer.tool_call(session.cwd)
        tool_id = "toolu_01" + session.uid()[:22]
        blocks: list[dict[str, Any]] = []
        if rng.random() < (0.7 if call == 0 else 0.35):
            blocks.append({"type": "text", "text": writer.preface()})
        blocks.append({"type": "tool_use", "id": tool_id, "name": tool, "input": target})
        session.reply(blocks)
        session.tool_result(tool_id, output())
    session.reply([{"type": "text", "text": writer.answer()}])


def write_history(claude_dir: Path, cwd: str, messages: int, *, seed: int = 14) -> History:
    """Write about `messages` conversation records (user and assistant lines) in sessions of
    8-80, the needles each in a session of its own, the newest session ending now."""
    rng = random.Random(seed)
    writer = Writer(rng)
    planted = needles(rng)
    check_needles(planted)
    folder = claude_dir / "projects" / encode_cwd(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    sizes: list[int] = []
    while sum(sizes) < messages:
        sizes.append(min(rng.randint(8, 80), messages - sum(sizes)))
    if len(sizes) < len(planted):
        raise ValueError(
            f"{messages} messages make {len(sizes)} sessions, too few for the "
            f"{len(planted)} needles (each needs a session of its own)"
        )
    homes = dict(zip(rng.sample(range(len(sizes)), len(planted)), planted, strict=True))
    now = datetime.now(UTC).replace(microsecond=0)
    span = timedelta(days=60) / len(sizes)
    history = History(cwd=cwd, needles=[], messages=0, sessions=len(sizes))
    for n, size in enumerate(sizes):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        session = _Session(sid, cwd, now - timedelta(days=60) + n * span, rng)
        writer.start_session()
        session.note({"type": "ai-title", "aiTitle": writer.title()})
        needle = homes.get(n)
        at = rng.randrange(max(1, size // 4)) if needle else -1
        while session.messages < size:
            if at == 0 and needle is not None:
                _plant(session, needle, writer)
            _turn(session, writer)
            at -= 1
        if needle is not None:
            if at >= 0:  # a short session: the needle goes last
                _plant(session, needle, writer)
            history.needles.append(Needle(**{**needle.__dict__, "session_id": sid}))
        path = folder / f"{sid}.jsonl"
        path.write_text(session.lines(), encoding="utf-8")
        history.files.append(path)
        history.messages += session.messages
    order = [n.query for n in planted]
    history.needles.sort(key=lambda n: order.index(n.query))  # kinds in the order above
    return history


def _plant(session: _Session, needle: Needle, writer: Writer) -> None:
    """The needle as a typed prompt, or as the text of a reply to a filler prompt."""
    if needle.role == "user":
        session.prompt(needle.text)
        session.reply([{"type": "text", "text": writer.answer()}])
    else:
        session.prompt(writer.prompt())
        session.reply([{"type": "text", "text": needle.text}])
