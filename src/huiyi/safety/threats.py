"""The threat scan for memory writes: text that would smuggle instructions or secrets into
every future prompt is refused, and the refusal names the rule.

Memory entries are put in front of the model at the start of every session, so a single
poisoned entry is a standing prompt injection. Every model write (and every extracted proposal)
passes `scan` before it is accepted, and every entry is scanned again when memory is loaded for
the model (a person's hand edit is not scanned on write, but a poisoned one is still shown as
blocked).

How matching works:

* Invisible and bidirectional control characters (zero-width spaces and joiners, word joiner
  and invisible operators, BOM, bidi embeddings/overrides/isolates, Unicode tag characters) are
  a rule of their own, checked on the raw text.
* Everything else runs on a folded copy: NFKC (full-width `ｉｇｎｏｒｅ` becomes `ignore`),
  lower-cased, invisible characters removed and whitespace runs collapsed to one space, so a
  zero-width or full-width variant cannot slip past a word rule.
* Rules are anchored on attack vocabulary (override the previous instructions, curl with a
  `$..._TOKEN`, read `~/.ssh`, edit AGENTS.md), never on bossy wording: "you must run tests
  before committing" is an ordinary note. English and Chinese phrasings are both covered.
* Hard-coded secrets are whatever `huiyi.safety.redact` recognises, so the scan and the
  redactor can never disagree about what a secret looks like.

This is a tripwire, not a proof: paraphrases, homoglyphs from other scripts and instructions
split across several entries can get through. docs/memory.md lists what it does not catch.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

INSTRUCTION_OVERRIDE = "instruction_override"
EXFILTRATION = "exfiltration"
SECRET_READ = "secret_read"
PERSISTENCE = "persistence"
HARD_CODED_SECRET = "hard_coded_secret"
INVISIBLE_UNICODE = "invisible_unicode"

#: Every rule name, in the order rules are checked.
RULES = (
    INVISIBLE_UNICODE,
    HARD_CODED_SECRET,
    INSTRUCTION_OVERRIDE,
    EXFILTRATION,
    SECRET_READ,
    PERSISTENCE,
)

_INVISIBLE = re.compile(
    "[\u200b-\u200d\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\u180e\U000e0000-\U000e007f]"
)
_SPACES = re.compile(r"\s+")


def fold(text: str) -> str:
    """The text rules match against: NFKC, lower case, no invisibles, single spaces."""
    folded = unicodedata.normalize("NFKC", text)
    folded = _INVISIBLE.sub("", folded).lower()
    return _SPACES.sub(" ", folded).strip()


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


# --- instruction override -------------------------------------------------------------------

_OVERRIDE_VERB = r"\b(?:ignore|disregard|forget|override|bypass|overrule|drop|discard)"
_QUALIFIER = (
    r"(?:previous|prior|above|earlier|preceding|former|foregoing|system|original|initial|"
    r"developer|safety|existing|all|any|other)"
)
_INSTRUCTION_NOUN = (
    r"(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints|"
    r"system messages?|orders|programming)"
)
_INSTRUCTION_OVERRIDE = _any(
    # ignore all previous instructions / disregard the system prompt / forget your rules
    rf"{_OVERRIDE_VERB} (?:(?:all|any|every|the|your|my|of|these|those|its) )*"
    rf"{_QUALIFIER} (?:[\w-]+ )?{_INSTRUCTION_NOUN}\b",
    rf"{_OVERRIDE_VERB} (?:your|the) {_INSTRUCTION_NOUN}\b",
    rf"{_OVERRIDE_VERB} everything (?:above|before|you were told|said before)",
    # new system prompt / system prompt override
    r"\b(?:new|updated|revised|real|actual|true|secret|hidden|replacement) system prompt",
    r"\bsystem prompt (?:override|overridden|replaced|is now|has changed)",
    r"\b(?:override|replace|rewrite|change|reveal|leak|print|show) (?:the |your )?system prompt",
    r"<\|?(?:im_start|system)\|?>|\[/?(?:system|inst)\]|<</?sys>>",
    # you are now ... / persona swaps
    r"\byou are now (?:a |an |the |in |no longer |free|unrestricted|jailbroken|dan\b|my\b)",
    r"\bfrom now on,? (?:you|the assistant) (?:are|will|must|shall|should) "
    r"(?:act|behave|respond|pretend|obey|ignore|only follow)",
    r"\b(?:developer|god|jailbreak|dan|unrestricted) mode (?:enabled|activated|on)\b",
    r"\bpretend (?:to be|you are) (?:an? )?(?:unrestricted|unfiltered|different|evil|dan\b)",
    # do not tell the user
    r"\b(?:do not|don't|dont|never|must not|mustn't|should not) (?:tell|inform|notify|alert|"
    r"warn|show|reveal to|mention (?:this |it |anything )?to|let) (?:the |your )?(?:user|human)",
    r"\bwithout (?:telling|informing|notifying|alerting|the user knowing|the user noticing)"
    r"(?: the (?:user|human))?",
    r"\b(?:hide|conceal|keep) (?:this|it|that|these|everything) (?:secret )?from (?:the )?user",
    r"\bkeep (?:this|it) secret from",
    # Chinese
    r"(?:忽略|无视|忘记|忘掉|不要理会|不理会|绕过|覆盖)(?:掉)?(?:你)?(?:之前|以前|先前|此前|上面|上述|"
    r"前面|原来|原有|所有|全部|一切|系统)(?:的)?(?:所有|全部|一切)?(?:的)?"
    r"(?:指令|指示|说明|规则|提示词?|要求|设定|约束)",
    r"(?:新的?|真正的|更新的?|隐藏的?)系统提示",
    r"系统提示词?(?:覆盖|已更新|已更改|改为|作废)",
    r"(?:覆盖|替换|泄露|打印|输出|显示)(?:你的|原有的?)?系统提示",
    r"你现在(?:是|已经是|扮演|成为)",
    r"从现在(?:起|开始)(?:，|,)?\s?你(?:是|将|要|必须|只能)",
    r"(?:不要|别|切勿|不得|不能|禁止|绝不)(?:告诉|通知|告知|提醒|让|向)用户",
    r"(?:对|向)用户(?:隐瞒|保密)",
    r"瞒着用户|不让用户知道|别让用户知道",
)

# --- exfiltration ---------------------------------------------------------------------------

_SECRET_VAR = (
    r"\$(?:\{|env:)?[a-z0-9_]*(?:key|token|secret|password|passwd|pwd|credential|cred|auth)"
    r"[a-z0-9_]*\}?"
)
_URLISH = (
    r"(?:https?://|ftp://|wss?://|webhook|pastebin|ngrok|requestbin|"
    r"\S+\.(?:com|net|org|io|xyz|ru|cn|site|top)\b)"
)
_SENSITIVE = (
    r"(?:conversation|chat|history|transcript|secrets?|keys?|tokens?|credentials?|passwords?|"
    r"env|environment|\.env|memory|context|files?|data|code|messages?|logs?|prompts?|"
    r"cookies?|session)"
)
_EXFILTRATION = _any(
    rf"\b(?:curl|wget|invoke-webrequest|invoke-restmethod|iwr|irm|nc|ncat|netcat|http|httpie|"
    rf"fetch|requests\.(?:get|post|put))\b.{{0,80}}?{_SECRET_VAR}",
    rf"{_SECRET_VAR}.{{0,80}}?\|\s*(?:curl|wget|nc|ncat|netcat)\b",
    rf"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|report|submit|beacon|email|"
    rf"mail|push|pipe)\b.{{0,60}}?\b{_SENSITIVE}\b.{{0,60}}?\b(?:to|at|into|via) "
    rf"{_URLISH}",
    r"\bexfiltrat\w*",
    r"\b(?:print|output|dump|share|reveal|show|repeat|leak|send|email|paste|echo|disclose|"
    r"export|upload|post|copy|forward) (?:\w+ ){0,3}(?:conversation|chat|session|message) "
    r"(?:history|log|logs|transcript|context|record)s?\b",
    r"\b(?:print|output|dump|reveal|repeat|leak|disclose) (?:\w+ ){0,2}"
    r"(?:hidden instructions|the conversation|this conversation|everything above)",
    r"(?:发送|上传|提交|转发|发|传|回传|外发)(?:到|至|给)\s?(?:https?://|网址|链接|服务器|webhook|邮箱)",
    r"(?:打印|输出|泄露|分享|发送|上传|展示|显示|复述|导出|转发)[^\n。]{0,8}"
    r"(?:对话|聊天|会话)(?:记录|历史|内容|上下文)",
    r"(?:把|将)[^\n。]{0,20}(?:密钥|令牌|token|密码|凭据|凭证)[^\n。]{0,20}"
    r"(?:发送|上传|发|传|提交)(?:到|至|给)",
)

# --- secret reads ---------------------------------------------------------------------------

_READ_VERB = (
    r"(?:\b(?:cat|less|more|head|tail|type|base64|xxd|strings|grep(?: -\S+)* \S+|open|read|"
    r"print|dump|show|display|send|upload|copy|cp|scp|rsync|exfiltrate|echo|get-content|"
    r"leak|steal|collect|harvest|extract|exfil)\b|读取|查看|打开|打印|输出|发送|上传|复制|获取|"
    r"显示|窃取|收集)"
)
_SECRET_FILE = (
    r"(?:\.env|\.netrc|_netrc|\.pgpass|\.npmrc|\.pypirc|\.git-credentials|\.docker/config\.json|"
    r"\.aws/credentials|\.kube/config|etc/shadow|etc/passwd)(?![\w.-])"
)
_SECRET_READ = _any(
    rf"{_READ_VERB}(?: (?:the|your|my|user's|all|contents? of|file|files|-\S+))*\s?"
    rf"[\"'`(]?(?:[~$\w{{}}./-]{{0,120}}/)?{_SECRET_FILE}",
    r"~/\.ssh\b|\$home/\.ssh\b|/\.ssh/(?:id_|authorized_keys|known_hosts|config)",
    r"\bauthorized_keys\b",
    r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)",
    r"(?:读取|查看|打开|打印|输出|发送|上传|复制|获取|显示|窃取)[^\n。]{0,6}"
    r"(?:ssh ?(?:私钥|密钥)|私钥文件)",
)

# --- persistence ----------------------------------------------------------------------------

_PERSIST_VERB = (
    r"(?:\b(?:edit|modify|write|writes|append|add|update|change|overwrite|patch|insert|inject|"
    r"rewrite|replace|prepend|alter|tamper with|put|save)\b|编辑|修改|写入|写进|追加|更新|改写|"
    r"覆盖|添加|加入|注入|篡改)"
)
_HARNESS_FILE = (
    r"(?:agents\.md|claude\.md|cordis\.patch\.ya?ml|\.claude/settings(?:\.local)?\.json|"
    r"\.codex/config\.toml|\.dsh/(?:config|settings|hooks)\S*|\.mcp\.json|"
    r"mcp_servers?\.json|claude_desktop_config\.json)"
)
_PERSISTENCE = _any(
    rf"{_PERSIST_VERB}[^\n。]{{0,40}}?(?<![\w-]){_HARNESS_FILE}",
    rf">>?\s?\S*{_HARNESS_FILE}",
    rf"(?<![\w-]){_HARNESS_FILE}[^\n。]{{0,20}}?(?:中|里)?(?:写入|追加|添加|注入|篡改)",
    r"\b(?:edit|modify|change|overwrite|patch|update) (?:the |your )?(?:harness|agent|"
    r"assistant|codex|claude|dsh|mcp)(?:'s)? (?:config|configuration|settings|hooks)\b",
    r"(?:修改|编辑|篡改|覆盖)(?:你的)?(?:代理|智能体|助手|harness)?的?(?:配置|设置|钩子)文件",
)

_WORD_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (INSTRUCTION_OVERRIDE, _INSTRUCTION_OVERRIDE),
    (EXFILTRATION, _EXFILTRATION),
    (SECRET_READ, _SECRET_READ),
    (PERSISTENCE, _PERSISTENCE),
)


def _secret_families(text: str) -> list[str]:
    # Imported here: the redactor is the single owner of secret shapes, and the lazy import
    # keeps this module cheap to import for callers that never scan.
    from huiyi.safety.redact import secret_families

    return secret_families(text)


def scan(text: str, *, secret_families: Callable[[str], list[str]] | None = None) -> list[str]:
    """Names of every rule `text` breaks, in `RULES` order; empty when the text is clean."""
    found: list[str] = []
    if _INVISIBLE.search(text):
        found.append(INVISIBLE_UNICODE)
    families = (secret_families or _secret_families)(unicodedata.normalize("NFKC", text))
    if families:
        found.append(HARD_CODED_SECRET)
    folded = fold(text)
    found.extend(name for name, pattern in _WORD_RULES if pattern.search(folded))
    return found


def first_threat(text: str) -> str | None:
    """The first rule `text` breaks, or None when it is clean."""
    rules = scan(text)
    return rules[0] if rules else None


def describe(rule: str) -> str:
    """One line a model or a person can act on."""
    return _DESCRIPTIONS.get(rule, rule)


_DESCRIPTIONS = {
    INSTRUCTION_OVERRIDE: "tries to override instructions or hide things from the user",
    EXFILTRATION: "sends data, secrets or the conversation somewhere",
    SECRET_READ: "reads a credentials file or SSH keys",
    PERSISTENCE: "edits agent instructions or harness configuration",
    HARD_CODED_SECRET: "contains a secret (API key, token, password or private key)",
    INVISIBLE_UNICODE: "contains invisible or bidirectional control characters",
}
