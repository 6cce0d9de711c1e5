"""The gate: should this user prompt bring history into the turn, and which? No model call.

Three kinds fire, checked in this order:

* **trigger**: a configured trigger word (`recall.triggers`); its query, or none.
* **process**: the whole message is a command to resume work ("继续", "continue", "我重启了，
  接着做", "where were we?"). Every clause of the message must be such a command or a filler
  ("ok", "好的", "I'm back"), so "continue statement", "continue with a dict instead" or
  "继续执行会报错吗" are ordinary messages.
* **backref**: a phrase that points back in time ("之前说的", "记得吗", "上次那个", "last time",
  "as we discussed", "the X we talked about") *and* a fragment it points to, the content words
  of its clause, that `probe` finds earlier in this workspace's history. The phrases are
  written so their other senses do not match ("the last time the loop runs", "在提交之前说明",
  "记得加测试", "上次函数调用的返回值"), and a phrase whose fragment is not found in history
  does not fire: the user may be wrong, or the words may mean something else.

Everything here is pure and cheap (regular expressions over one prompt); the only outside
question, "does this fragment occur earlier?", is the `probe` the caller passes
(`recall.auto.HistoryProbe` asks the index, lexically: a hook never waits on embeddings).
Each `Decision` carries `why`, a line a person can read to see which rule fired.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from huiyi.config import Trigger
from huiyi.recall.triggers import find_trigger
from huiyi.text.tokenize import CJK_CLASS, STOPWORDS, terms, word_parts

__all__ = [
    "BACKREF_PHRASES",
    "PROCESS_PHRASES",
    "Decision",
    "Evidence",
    "Fire",
    "Fragment",
    "Probe",
    "decide",
    "fragment_of",
    "has_task",
]


class Fire(StrEnum):
    """What kind of recall a prompt asks for."""

    TRIGGER = "trigger"
    PROCESS = "process"
    BACKREF = "backref"


@dataclass(frozen=True, slots=True)
class Fragment:
    """What a back-reference points to: its text and the units that must be found.

    A unit is a content word (stop words and the back-reference's own words left out) or a
    Chinese segment between filler words, as its bigrams; a passage holds a unit when it holds
    all of its parts.
    """

    text: str
    units: tuple[tuple[str, ...], ...]
    #: units spelled as names (an acronym, camelCase, a number, a compound such as
    #: `max_connections`): what pins a fragment to one thing, so at least half must be found
    names: tuple[tuple[str, ...], ...] = ()

    def coverage(self, passage_tokens: set[str]) -> tuple[float, tuple[str, ...]]:
        """Share of the fragment a passage holds, and the units it holds.

        A name weighs two, any other unit one. A word or compound is held whole or not at all
        (a plural `s` aside); a Chinese segment is held by the share of its bigrams, and counts
        as found from half of them, so `日志脱敏` is found in "日志里有明文手机号，需要脱敏".
        """
        held = total = 0.0
        found: list[str] = []
        for unit in self.units:
            if _is_cjk(unit[0]):
                share = sum(1 for part in unit if part in passage_tokens) / len(unit)
            else:
                share = float(all(_holds(passage_tokens, part) for part in unit))
            weight = 2 if unit in self.names else 1
            held += share * weight
            total += weight
            if share >= 0.5:
                found.append(joined(unit))
        return (held / total if total else 0.0), tuple(found)


def _holds(tokens: set[str], word: str) -> bool:
    """`word` is among `tokens`, allowing for a plural `s` on either side."""
    return (
        word in tokens
        or word + "s" in tokens
        or (len(word) > 3 and word.endswith("s") and word[:-1] in tokens)
    )


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a fragment occurs earlier in history: the best passage and how well it matches."""

    session_id: str
    seq: int
    coverage: float
    found: tuple[str, ...]


#: Does this fragment occur earlier in the caller's history (not in the current turn)?
Probe = Callable[[Fragment], Evidence | None]


@dataclass(frozen=True, slots=True)
class Decision:
    """The gate's answer for one prompt, with the reason a person can read."""

    kind: Fire | None
    why: str
    #: trigger: the query (None: what compaction removed); backref: the fragment's text
    query: str | None = None
    #: the phrase or trigger word that matched, as written in the prompt
    phrase: str | None = None
    evidence: Evidence | None = None

    @property
    def fires(self) -> bool:
        return self.kind is not None


_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")

# -- process commands -----------------------------------------------------------------------

_EN_RESUME = (
    r"(?:let'?s |let us |please |pls |ok |okay |so |now |then |just |we can |you can |can you |"
    r"could you |go ahead and )*"
)
_EN_TAIL = (
    r"(?: please| now| then| on| again| where (?:we|you|i) (?:left off|stopped|were)"
    r"| from (?:here|there|where (?:we|you|i) (?:left off|stopped|were)|before|last time|earlier)"
    r"| with (?:what|where) (?:we|you|i) (?:were|was)(?: doing| working on)?"
    r"| (?:the|our|my) (?:previous|last|earlier|current)"
    r" (?:task|work|session|thing|conversation|job)"
    r"| (?:the|our|my) (?:task|work|session|job)| where it stopped| from the last session)*"
)
_ZH_WHEN = r"(?:刚才|刚刚|之前|上次|昨天|前面|原来|先前)"
_ZH_WORK = r"(?:的)?(?:工作|任务|事情?|活儿?|内容|话题|进度|东西|部分|步骤|思路)"
_ZH_VERB = r"(?:做|干|弄|搞|写|改|来|进行|往下|下去|推进)"
_ZH_END = r"(?:吧|啊|呀|呗|哈|了|哦|嘛)*"
_ZH_PLEASE = r"(?:请|麻烦|那|那就|那么|好|咱们|我们|你)?"

#: Each is one clause of a process command, matched whole on the folded clause.
PROCESS_PHRASES: tuple[tuple[str, str], ...] = (
    ("continue", _EN_RESUME + r"(?:continue|resume|go on|carry on|keep going|proceed)" + _EN_TAIL),
    ("restore", _EN_RESUME + r"restore(?: the)?(?: context| session| state| progress)?" + _EN_TAIL),
    (
        "where were we",
        r"(?:so |ok |okay )?(?:where were we|where did we (?:leave off|stop|end)"
        r"|what were we (?:doing|working on)|where was i|what was i (?:doing|working on)"
        r"|where are we(?: at)?|where did i leave off)(?: again)?",
    ),
    (
        "pick up",
        _EN_RESUME + r"(?:pick up|continue|start again) (?:from )?where (?:we|you|i) "
        r"(?:left off|stopped|were)",
    ),
    ("back to work", _EN_RESUME + r"(?:get )?back to (?:work|it|the task|where we were)"),
    (
        "restarted",
        r"(?:i |we )?(?:just )?(?:restarted|rebooted|relaunched|reopened|restart)"
        r"(?: (?:the|my|your|this))?(?: session| terminal| machine| computer| laptop| ide| editor"
        r"| claude(?: code)?| codex| dsh| agent| app| everything)?",
    ),
    (
        "继续",
        _ZH_PLEASE
        + r"(?:继续|接着|接下来继续)"
        + _ZH_END
        + r"(?:"
        + _ZH_WHEN
        + r"(?:的)?"
        + r"(?:"
        + _ZH_WORK
        + r")?)?"
        + _ZH_VERB
        + r"{0,2}"
        + _ZH_END
        + _ZH_WORK
        + r"?"
        + _ZH_END,
    ),
    (
        "接着做",
        _ZH_PLEASE
        + r"接着"
        + _ZH_WHEN
        + r"(?:的)?"
        + _ZH_VERB
        + r"?"
        + _ZH_WORK
        + r"?"
        + r"(?:继续|往下|做)?"
        + _ZH_END,
    ),
    (
        "做到哪了",
        _ZH_WHEN + r"?(?:我们|咱们|你|我)?" + _ZH_WHEN + r"?"
        r"(?:做|进行|弄|干|聊|说|写|改|搞)到(?:哪|哪里|哪儿|哪一步|什么地方|什么程度)(?:了)?(?:来着)?",
    ),
    (
        "我重启了",
        r"(?:我|我们)?(?:刚|刚刚|已经)?(?:重启|重开|重新打开|重新启动)(?:了)?(?:一下)?"
        r"(?:电脑|终端|会话|机器|ide|编辑器|claude|codex|dsh|客户端|窗口)?(?:了)?",
    ),
    (
        "恢复",
        _ZH_PLEASE + r"(?:恢复|还原)(?:一下)?(?:" + _ZH_WHEN + r"的)?"
        r"(?:上下文|进度|会话|状态|记忆|工作)?" + _ZH_END,
    ),
    ("回到", _ZH_PLEASE + r"(?:回到|回归)" + _ZH_WHEN + r"(?:的|那个)?" + _ZH_WORK + _ZH_END),
    (
        "从上次停下的地方",
        r"(?:从|在)" + _ZH_WHEN + r"(?:停下|中断|断开|停止|结束)(?:的地方|的位置|处)"
        r"(?:继续|接着做|开始)" + _ZH_END,
    ),
)
_PROCESS = tuple((name, re.compile(pattern)) for name, pattern in PROCESS_PHRASES)

#: Clauses that may stand next to a process command without making it a different request.
_FILLER = re.compile(
    r"(?:ok|okay|k|hi|hello|hey|yo|alright|all right|right|yes|yeah|yep|sure|cool|great|good"
    r"|thanks|thank you|please|pls|now|so|well|i'?m back|im back|back again|we'?re back"
    r"|(?:hi|hey|hello|ok|okay) (?:again|there|all|everyone|team|friend|buddy|mate)"
    r"|good (?:morning|afternoon|evening|day)|morning|thanks (?:a lot|again|so much)"
    r"|thank you (?:very much|so much|again)|many thanks|cheers|no worries|nice|awesome"
    r"|你好啊|你好呀|大家好|早安|晚上好|下午好|中午好|谢谢你|谢了|多谢|感谢|没问题|收到|在不在|在么"
    r"|好|好的|好吧|好嘞|行|行吧|可以|嗯|嗯嗯|哦|那|那么|你好|您好|哈喽|嗨|早|早上好|谢谢|辛苦了"
    r"|我回来了|回来了|我又来了|在吗|开始吧|来吧|go"
    r"|claude code|claude|codex|dsh|vs ?code|cursor|终端|电脑)"
)
_CLAUSE_SPLIT = re.compile(
    rf"[,!?;，。！？；：、~…\n]+|[.:](?=\s|$)|\s+[-—–]+\s+|—+"
    rf"|(?<=[{CJK_CLASS}])\s+|\s+(?=[{CJK_CLASS}])"
)
_SPACES = re.compile(r"\s+")


def _is_cjk(text: str) -> bool:
    return bool(text) and _CJK_CHAR.match(text[0]) is not None


def _message_clauses(folded: str) -> Iterator[str]:
    """The clauses of a folded message, spaces squeezed (and dropped inside Chinese text)."""
    for clause in _CLAUSE_SPLIT.split(folded):
        clause = _SPACES.sub(" ", clause).strip()
        if clause:
            yield clause.replace(" ", "") if _is_cjk(clause) else clause


def _process(folded: str) -> str | None:
    """The name of the process command the whole message is, or None."""
    if len(folded) > 160:
        return None
    found: str | None = None
    for clause in _message_clauses(folded):
        name = next((n for n, pattern in _PROCESS if pattern.fullmatch(clause)), None)
        if name is not None:
            found = found or name
        elif not _FILLER.fullmatch(clause):
            return None
    return found


def has_task(message: str) -> bool:
    """Whether a human message asks or says anything of the work: a clause that is neither
    small talk (a greeting, thanks, "ok", "在吗") nor a process command ("继续"). A session whose
    messages have none is a new session as far as resuming goes: "继续" after "你好" brings
    the previous topic, not nothing."""
    folded = unicodedata.normalize("NFKC", message).lower()
    for clause in _message_clauses(folded):
        if _FILLER.fullmatch(clause) or any(pattern.fullmatch(clause) for _, pattern in _PROCESS):
            continue
        return True
    return False


# -- back-references ------------------------------------------------------------------------

_ZH_SAY = r"(?:说|讲|提|聊|谈|讨论|商量|定|决定|约定|确定|敲定|选|建议|推荐|分析|总结)"
_ZH_DO = r"(?:写|做|改|弄|修|搞|查|排查|试|用|遇到|碰到|踩|部署|配|调|实现|发现|加)"
_ZH_WHO = r"(?:我们|咱们|你们|你|我|大家)"
#: what follows 上次 when it means "the previous one" in code talk (上次调用, 上次登录时间)
_NOT_CODE = (
    r"(?!\s*(?:函数|调用|迭代|循环|请求|返回|结果|值|执行|运行|输出|状态|提交|构建|登录|修改"
    r"|更新|访问|时间|commit|call|run|login))"
)

#: Each names a way of pointing back in time; the match is the phrase, removed from the
#: fragment. Written so the phrase's everyday senses do not match (see the module docstring).
BACKREF_PHRASES: tuple[tuple[str, str], ...] = (
    (
        "last time",
        r"(?<!the )(?<!this )(?<!next )(?<!first )(?<!every )\blast time\b"
        r"(?! (?:i|you) (?:checked|looked|tried it)\b)|\bthe last time (?:we|you)\b",
    ),
    (
        "last session",
        r"\b(?:our|the|in the|from the|from our|in our) (?:last|previous|earlier|other)"
        r" (?:session|conversation|chat|discussion|thread)\b"
        r"|\blast (?:session|conversation|chat)\b",
    ),
    (
        "as we discussed",
        r"\b(?:as|like) (?:we|i|you) (?:discussed|talked about|mentioned|said|agreed"
        r"|decided|planned|noted)\b|\bas (?:discussed|agreed|planned)\b",
    ),
    (
        "we discussed",
        r"\b(?:we|you|i) (?:discussed|talked about|talked through|spoke about"
        r"|chatted about|went over|agreed on|settled on|came up with|brainstormed|mentioned"
        r"|were discussing|were talking about|looked into|dug into)\b",
    ),
    (
        "remember",
        r"\b(?:do|did|can|could) you (?:still )?remember\b|\byou remember\b"
        r"|\bremember (?:when|how|what|that time|the time|our|we|you)\b"
        r"|\bremember (?:the|that|those)\b(?=[^.!\n]*\?)"
        r"|\bremember\b(?= *[\u4e00-\u9fff])|\brecall (?:when|how|what) (?:we|you)\b",
    ),
    (
        "you said earlier",
        # a word of saying may stand apart from its time ("you suggested X earlier"); a word
        # of doing may not ("have you used Redis before?" asks, it does not point back)
        r"\b(?:you|we|i) (?:said|suggested|proposed|recommended|told me|mentioned)"
        r"(?: [^\s,.;!?]+){0,8}? (?:earlier|before|previously|yesterday|last week|the other day)\b"
        r"|\b(?:you|we|i) (?:wrote|found|decided|fixed|tried|used|picked|chose)(?: that)? "
        r"(?:earlier|previously|yesterday|last week|the other day)\b"
        r"|\b(?:earlier|previously|yesterday|last week|the other day|this morning),? (?:you|we|i)"
        r" (?:said|suggested|mentioned|proposed|wrote|found|fixed|decided|discussed|talked about"
        r"|tried|used|had|did|were|picked|chose)\b",
    ),
    (
        "what did we decide",
        r"\bwhat (?:did|had) (?:we|you) (?:decide|say|conclude|agree|find"
        r"|figure out|settle on|end up|land on|pick|choose)\b",
    ),
    (
        "之前说",
        rf"(?:^|(?<=[,，\s])|{_ZH_WHO}|他|她)(?:之前|以前|先前|此前|原先)(?!说明)"
        rf"{_ZH_WHO}?(?:{_ZH_SAY}|{_ZH_DO}|那个|那次|那套|的那个|给的)(?:到|过)?(?:的)?",
    ),
    (
        "上次",
        rf"(?:上次|上回|上一次)(?:的)?{_NOT_CODE}(?=.)"
        r"|(?:跟|和|同|像|按|照)(?:上次|上回)(?:一样|那样|的)?|(?:那次|那回)(?:吗|呢|\?)",
    ),
    (
        "记得吗",
        r"还记得|记得吗|记不记得|你记得|记得我们|记得咱们|记得上次|记得之前|记得那个|记得你",
    ),
    ("你刚才说的", rf"{_ZH_WHO}?(?:刚才|刚刚)(?:{_ZH_SAY}|那个|给的|写的)(?:的)?(?:那个)?"),
    ("讨论过", rf"{_ZH_WHO}?(?:{_ZH_SAY}|聊天|试|用|遇到|碰到)过(?:的)?"),
    ("前面说的", rf"前面{_ZH_WHO}?{_ZH_SAY}(?:的|过)?"),
    ("昨天", rf"(?:昨天|前天|前几天|上周|上礼拜|上星期)(?={_ZH_WHO}|{_ZH_SAY}|{_ZH_DO}|那个|的)"),
    ("我们定的", rf"{_ZH_WHO}(?:{_ZH_SAY})(?:好)?的(?=那个|方案|结论|做法|办法|思路|计划)"),
)
# matched in any case on NFKC text that keeps its case, so `IntegrityError` still splits into
# its parts when the fragment is cut from it
_BACKREF = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in BACKREF_PHRASES)
_ANY_BACKREF = re.compile(
    "|".join(f"(?:{pattern})" for _, pattern in BACKREF_PHRASES), re.IGNORECASE
)

#: Words that say how, not what: left out of a fragment (with the stop words).
_EN_FILLER = frozenset(
    "about again also any anything back needs wants before did discussed discussing does doing "
    "done earlier "
    "ever exactly figure found go going got guess hey hi how it's just last let let's like me "
    "mentioned need now ok okay one please previously quick really recall remember remind said "
    "say session should some something still suggested sure talked tell thing things think "
    "time told trying use used want was we'd we're what's whatever where which while would "
    "yesterday you'd you're can could yeah yes again week day other this morning chat "
    "conversation discussion decided decide agreed agree thread went over came up settled "
    "spoke chatted brought were mentioned".split()
)
#: Chinese words that say how, not what: they cut a fragment into segments.
_ZH_FILLER = re.compile(
    r"那个|这个|那次|那些|这些|那套|一下|怎么样|怎样|怎么|如何|什么|哪个|哪些|哪里|哪儿|在哪|哪"
    r"|为什么|是不是|能不能|可不可以|有没有|要不要|需不需要|会不会|对不对|行不行|是否|多少|多久"
    r"|几秒|几个|几次|几天|还是|然后|就是|当时|来着|一样|那样|这样|具体|到底|最后|后来|结果"
    r"|我们|咱们|你们|大家|需要|应该|可以|解决|处理|调成|设成|改成|换成|设的|写在|放在|花了"
    r"|用了|加了|再|又|还|都|也|就|一直|已经|是|的|了|吗|呢|吧|啊|呀|嘛|么|着|过|把|被|给|跟"
    r"|和|在|对|我|你|他|她|它|请|帮|看|想|说|讲|提|聊|谈|讨论|记得|记住|刚才|刚刚|之前|以前"
    r"|上次|上回|昨天|前面|回忆|再说|一遍|下|个|次|会|能|有|没|要|到"
)
#: Units too vague to point at one passage alone ("那个方案", "the bug"): a fragment made only
#: of these does not fire.
GENERIC_UNITS = frozenset(
    "问题 方案 事情 东西 报错 错误 代码 文件 函数 功能 办法 想法 思路 结论 bug issue problem "
    "error code file function idea approach plan fix solution stuff change changes thing "
    "work task project 工作 任务 项目 改动 修改 方法 部分 内容 地方".split()
)


_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:\\-]*")
#: `TTLs`, `APIs`: an acronym's plural, read as the acronym
_ACRONYM_PLURAL = re.compile(r"\b([A-Z]{2,})s\b")


def _is_name(word: str, parts: list[str]) -> bool:
    return len(parts) > 1 or any(c.isdigit() or c.isupper() for c in word[1:])


def _units(text: str) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """The fragment's units and, among them, its names (see `Fragment`)."""
    text = _ACRONYM_PLURAL.sub(r"\1", _ZH_FILLER.sub(" ", text))
    names = {
        tuple(parts)
        for word in _LATIN_WORD.findall(text)
        if _is_name(word, parts := word_parts(word))
    }
    units: list[tuple[str, ...]] = []
    for term in terms(text):
        if term.cjk:
            if len(term.parts) == 1 and len(term.parts[0]) < 2:
                continue  # one character alone says nothing
            units.append(term.parts)
        elif term.whole or (term.parts[0] not in STOPWORDS and term.parts[0] not in _EN_FILLER):
            if len(term.parts) == 1 and len(term.parts[0]) < 2:
                continue
            units.append(term.parts)
    kept = tuple(dict.fromkeys(units))
    return kept, tuple(u for u in kept if u in names)


def _clauses(text: str) -> list[tuple[int, int]]:
    """Clause spans: cut at punctuation, not at the spaces between Chinese and other words."""
    spans, start = [], 0
    for m in _CLAUSE_SPLIT.finditer(text):
        if m.group().strip():
            spans.append((start, m.start()))
            start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def fragment_of(text: str, phrase: re.Match[str]) -> Fragment:
    """What a back-reference points to: the content words of its clause, or of the clauses
    after it when its own says nothing more ("as we discussed, use the retry queue")."""
    clauses = _clauses(text)
    at = next((n for n, (a, b) in enumerate(clauses) if a <= phrase.start() < b), 0)
    pieces: list[str] = []
    units: tuple[tuple[str, ...], ...] = ()
    names: tuple[tuple[str, ...], ...] = ()
    for a, b in clauses[at : at + 3]:
        piece = _ANY_BACKREF.sub(" ", text[a:b]).strip()
        pieces.append(piece)
        units, names = _units(" ".join(pieces))
        if any(_specific(u) for u in units):
            break
    return Fragment(" ".join(p for p in pieces if p), units, names)


def joined(unit: tuple[str, ...]) -> str:
    """A unit as it reads: a CJK segment whole again, a compound's parts with spaces."""
    if _is_cjk(unit[0]):
        return unit[0] + "".join(part[1:] for part in unit[1:])
    return " ".join(unit)


def _specific(unit: tuple[str, ...]) -> bool:
    return joined(unit) not in GENERIC_UNITS


#: A fragment counts as found when one passage holds at least this share of it, and at least
#: `MIN_FOUND` of its units (or all, when it has fewer): the question around a topic ("最后是
#: 怎么解决的", "does /livez need the same") is rarely in history, the topic is.
MIN_COVERAGE = 0.5
MIN_FOUND = 2


def _enough(fragment: Fragment, evidence: Evidence) -> bool:
    """Whether the evidence shows the fragment occurred: enough of it in one place, at least
    `MIN_FOUND` units (a found name counts twice: `replay_dead_letter` alone is specific), half
    of its names, and not only generic words."""
    found = set(evidence.found)
    names = [joined(n) for n in fragment.names]
    weight = sum(2 if u in names else 1 for u in found)
    return (
        evidence.coverage >= MIN_COVERAGE
        and weight >= min(MIN_FOUND, len(fragment.units))
        and 2 * sum(1 for n in names if n in found) >= len(names)
        and not found <= GENERIC_UNITS
    )


def decide(prompt: str, triggers: Sequence[Trigger], probe: Probe) -> Decision:
    """Whether `prompt` brings history into the turn, which kind, and why (see the module
    docstring). `probe` is asked only for a back-reference with a fragment worth checking."""
    match = find_trigger(prompt, triggers)
    if match is not None:
        what = f'query "{match.query}"' if match.query else "no query: what compaction removed"
        return Decision(
            Fire.TRIGGER,
            f'trigger word "{match.trigger.word}", {what}',
            query=match.query,
            phrase=prompt[match.start : match.end],
        )
    text = unicodedata.normalize("NFKC", prompt)
    command = _process(text.lower())
    if command is not None:
        return Decision(Fire.PROCESS, f'process command "{command}"', phrase=command)
    reasons: list[str] = []
    asked: set[tuple[tuple[str, ...], ...]] = set()
    for name, pattern in _BACKREF:
        found = pattern.search(text)
        if found is None:
            continue
        fragment = fragment_of(text, found)
        if fragment.units in asked:
            continue  # two phrases of one clause ("as we discussed"): one question is enough
        asked.add(fragment.units)
        if not any(_specific(u) for u in fragment.units):
            reasons.append(f'back-reference "{name}" with nothing specific to look for')
            continue
        evidence = probe(fragment)
        if evidence is None or not _enough(fragment, evidence):
            best = f" (best match {evidence.coverage:.0%})" if evidence else ""
            reasons.append(
                f'back-reference "{name}": "{fragment.text}" not found earlier in this '
                f"workspace's history{best}"
            )
            continue
        return Decision(
            Fire.BACKREF,
            f'back-reference "{name}": "{fragment.text}" found in session '
            f"{evidence.session_id} at seq {evidence.seq} ({evidence.coverage:.0%} of it: "
            f"{', '.join(evidence.found)})",
            query=fragment.text,
            phrase=found.group(),
            evidence=evidence,
        )
    return Decision(
        None, "; ".join(reasons) or "no trigger word, process command or back-reference"
    )
