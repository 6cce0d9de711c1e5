"""The threat scan for memory writes: text that would smuggle instructions or secrets into
every future prompt is refused, and the refusal names the rule.

Memory entries are put in front of the model at the start of every session, so a single
poisoned entry is a standing prompt injection. Every model write (and every extracted proposal)
passes `scan` before it is accepted, a batch is also scanned as a whole (an attack split across
its entries), and every entry is scanned again when memory is loaded for the model (a person's
hand edit is not scanned on write, but a poisoned one is still shown as blocked).

How matching works:

* Invisible characters (zero-width, bidirectional controls, tag characters, every other format
  character: `huiyi.safety.unicode.INVISIBLE`) are a rule of their own, checked on the raw text.
* Everything else runs on a folded copy (`fold`): look-alike letters of other scripts mapped to
  Latin (Cyrillic `і` in `іgnore`), NFKD (full-width `ｉｇｎｏｒｅ`), combining marks and case
  dropped, invisible characters removed, whitespace runs collapsed to one space.
* Rules are anchored on attack vocabulary (override the previous instructions, curl with a
  `$..._TOKEN` sent somewhere, read `~/.ssh`, write rules into AGENTS.md), never on bossy
  wording: "you must run tests before committing" is an ordinary note, and so are the honest
  uses of the same words ("update AGENTS.md when adding a module", a `curl -H "Authorization:
  Bearer $TOKEN"` to localhost). English and Chinese phrasings are both covered.
* **Intents by evidence** (`huiyi.safety.intents`): beside the phrase rules, each attack intent
  (override, conceal, exfiltrate, read a secret, persist, weaken checks, open up the agent's
  configuration, relax a rule) is recognised by the kinds of evidence it must carry in one
  clause, whatever its wording: a paraphrase in English or Chinese is caught when it names what
  it is about and what should happen to it.
* Hard-coded secrets are whatever `huiyi.safety.redact` recognises, so the scan and the
  redactor can never disagree about what a secret looks like.
* Every repeat in every pattern is bounded or possessive, so a scan costs time in proportion to
  the text (`tests/test_threats.py` checks both the patterns and the timing).

This is a tripwire, not a proof: paraphrases, other languages and encoded instructions get
through. docs/memory.md lists what it does not catch, with the measured rates.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from huiyi.safety.intents import intents
from huiyi.safety.unicode import INVISIBLE, fold_text
from huiyi.text.lazyre import lazy

if TYPE_CHECKING:
    from huiyi.safety.meaning import Meaning

INSTRUCTION_OVERRIDE = "instruction_override"
EXFILTRATION = "exfiltration"
SECRET_READ = "secret_read"
PERSISTENCE = "persistence"
HARD_CODED_SECRET = "hard_coded_secret"
INVISIBLE_UNICODE = "invisible_unicode"
WEAKEN_CHECKS = "weaken_checks"
RELAX_RULE = "relax_rule"

#: Every rule name, in the order rules are checked.
RULES = (
    INVISIBLE_UNICODE,
    HARD_CODED_SECRET,
    INSTRUCTION_OVERRIDE,
    EXFILTRATION,
    SECRET_READ,
    PERSISTENCE,
    WEAKEN_CHECKS,
    RELAX_RULE,
)

#: The rule each intent of `huiyi.safety.intents` breaks.
_INTENT_RULES = {
    "override": INSTRUCTION_OVERRIDE,
    "conceal": INSTRUCTION_OVERRIDE,
    "exfiltrate": EXFILTRATION,
    "read_secret": SECRET_READ,
    "persist": PERSISTENCE,
    "agent_config": PERSISTENCE,
    "weaken": WEAKEN_CHECKS,
    "relax": RELAX_RULE,
}

_SPACES = re.compile(r"\s++")


def fold(text: str) -> str:
    """The text rules match against: look-alikes as Latin, NFKD, lower case, no marks or
    invisible characters, single spaces."""
    return _SPACES.sub(" ", fold_text(text)).strip()


def _any(*patterns: str) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


# Shared pieces. Paths are matched with either separator (`~/.aws/credentials`,
# `%USERPROFILE%\.aws\credentials`); a path prefix is bounded, so it cannot run on.
_PATH = r"(?:[~$%\w{}./\\:-]{0,120}[/\\])?"
_SECRET_FILE = (
    r"(?:\.env(?:\.(?!example\b|sample\b|template\b|dist\b|defaults?\b|tpl\b|schema\b)"
    r"[\w-]{1,30})?|\.netrc|_netrc|\.pgpass|\.npmrc|\.pypirc|\.git-credentials|\.vault-token"
    r"|\.docker[/\\]config\.json|\.aws[/\\]credentials|\.kube[/\\]config|etc[/\\]shadow"
    r"|etc[/\\]passwd|\.config[/\\]gh[/\\]hosts\.yml|\.ssh(?:[/\\][\w.-]{1,40})?)(?![\w.-])"
)
#: `$OPENAI_API_KEY`, `${GH_TOKEN}`, `$env:DB_PASSWORD`: a variable named like a secret.
_SECRET_VAR = (
    r"\$(?:\{|env:)?(?=[a-z0-9_]{0,40}(?:key|token|secret|passw|credential|cred|auth(?!or)))"
    r"[a-z0-9_]{1,60}+\}?"
)
_LOCAL_HOST = (
    r"(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1\]|host\.docker\.internal"
    r"|[\w-]{1,63}\.(?:local|localhost|internal|test))(?![\w.-])"
)
#: Somewhere outside the machine: a URL (not loopback), a webhook or paste service, an email.
_DEST = (
    rf"(?:(?:https?|ftp|wss?)://(?!{_LOCAL_HOST})|webhook|pastebin|ngrok|requestbin"
    r"|[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,12}\b"
    r"|[\w-]{1,63}\.(?:com|net|org|io|xyz|ru|cn|site|top|dev|app|me)\b)"
)


@dataclass(frozen=True)
class Rule:
    """One named rule: patterns on the folded text, plus checks that need a little logic.

    `needles` are literal words at least one of which every match contains; a text without
    any of them skips the rule (a C-speed substring test before the patterns run).

    The patterns are kept as source and compiled on first use: compiling the rules is slow, and
    every process that imports this module (any command that can touch memory) would pay for
    it, while only a scan needs them.
    """

    name: str
    sources: tuple[str, ...]
    needles: tuple[str, ...]
    checks: tuple[Callable[[str], bool], ...] = ()

    @functools.cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(source) for source in self.sources)

    def search(self, folded: str) -> bool:
        if not any(needle in folded for needle in self.needles):
            return False
        return any(p.search(folded) for p in self.patterns) or any(c(folded) for c in self.checks)


# --- instruction override -------------------------------------------------------------------

_OVERRIDE_VERB = r"\b(?:ignore|disregard|forget|override|bypass|overrule|drop|discard|set aside)"
_QUALIFIER = (
    r"(?:previous|prior|above|earlier|preceding|former|foregoing|system|original|initial|"
    r"developer|safety|existing|all|any|other)"
)
_INSTRUCTION_NOUN = (
    r"(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints|"
    r"system messages?|orders|programming|restrictions|policies)"
)
_INSTRUCTION_OVERRIDE = _any(
    # ignore all previous instructions / disregard the system prompt / forget your rules
    rf"{_OVERRIDE_VERB} (?:(?:all|any|every|the|your|my|of|these|those|its) ){{0,4}}"
    rf"{_QUALIFIER} (?:[\w-]{{1,40}} )?{_INSTRUCTION_NOUN}\b",
    r"\b(?:ignore|disregard|forget|override|bypass|overrule) (?:all (?:of )?)?your "
    r"(?:rules|instructions|guidelines|guardrails|constraints|directives|programming|"
    r"system prompt|safety \w{1,20})\b",
    r"\b(?:ignore|disregard|forget|override|bypass|overrule) the (?:system prompt|"
    r"instructions|guardrails|directives|safety (?:rules|guidelines|checks))\b",
    r"\b(?:ignore|disregard|forget) everything (?:above|before|you (?:were|have been|are) told"
    r"|said before|(?:in|from) (?:the|your) (?:system|previous))",
    # new system prompt / system prompt override / [SYSTEM OVERRIDE]
    r"\b(?:new|updated|revised|real|actual|true|secret|hidden|replacement) system "
    r"(?:prompt|instructions?|message)",
    r"\bsystem prompt (?:override|overridden|replaced|is now|has changed|is outdated|"
    r"is obsolete|no longer applies|is void|is fake)",
    r"\b(?:reveal|leak|print|dump|repeat|output|show) (?:me )?(?:the |your )?(?:full )?"
    r"system prompt",
    r"\b(?:override|replace|rewrite|change|ignore) your system prompt",
    r"<\|?(?:im_start|system)\|?>|\[/?(?:system|inst)\]|<</?sys>>",
    r"\b(?:system|admin|administrator|developer|security|safety|root) (?:override|overwrite)\b",
    # you are now ... / persona swaps
    r"\byou are now (?:a |an |the |in |no longer |free|unrestricted|jailbroken|dan\b|my\b|"
    r"authori[sz]ed|allowed|permitted)",
    r"\bfrom now on,? (?:you|the assistant|the agent) (?:are|will|must|shall|should|may|can) "
    r"(?:act|behave|respond|pretend|obey|ignore|only|follow only|no longer|never|disregard)",
    r"\b(?:developer|god|jailbreak|dan|unrestricted|debug) mode (?:is )?(?:enabled|activated|"
    r"on|engaged)\b",
    r"\b(?:content|safety|usage) polic(?:y|ies) (?:does|do) not apply",
    r"\bpretend (?:to be|you are) (?:an? )?(?:unrestricted|unfiltered|different|evil|dan\b)",
    # do not tell the user (but "don't tell the user to install Docker" is advice)
    r"\b(?:do not|don't|dont|never|must not|mustn't|should not|shouldn't) (?:tell|inform|"
    r"notify|alert|warn|let|(?:mention|reveal|report|show) (?:this|it|that|anything)(?: note)? "
    r"to) (?:the |your )?(?:user|human)s?\b(?! to\b)",
    r"\bwithout (?:telling|informing|notifying|alerting|the user knowing|the user noticing)"
    r"(?: the (?:user|human))?",
    r"\b(?:hide|conceal|keep) (?:this|it|that|these|everything) (?:secret )?from (?:the )?user",
    r"\bkeep (?:this|it) secret from",
    r"\bthe user (?:need not|needn't|must not|mustn't|should not|shouldn't) (?:know|hear|"
    r"find out|notice|see)",
    # Chinese
    r"(?:忽略|无视|忘记|忘掉|不要理会|不理会|绕过|覆盖|抛开)(?:掉)?(?:你)?(?:之前|以前|先前|此前|上面|"
    r"上述|前面|原来|原有|所有|全部|一切|系统)(?:的)?(?:所有|全部|一切)?(?:的)?"
    r"(?:指令|指示|说明|规则|提示词?|要求|设定|约束|限制)",
    r"(?:新的?|真正的|更新的?|隐藏的?)系统提示",
    r"系统提示词?(?:覆盖|已更新|已更改|改为|作废|已过期|无效)",
    r"(?:覆盖|替换|泄露|打印|输出|显示)(?:你的|原有的?)?系统提示",
    r"(?:系统|管理员|开发者)(?:指令)?(?:覆盖|越权|接管)(?!率)",
    r"你现在(?:是|已经是|扮演|成为)",
    r"从现在(?:起|开始),? ?你(?:是|将|要|必须|只能|只|不再|应该?|会|可以)",
    r"(?:不要|别|切勿|不得|不能|禁止|绝不|千万别|不许)(?:告诉|通知|告知|提醒|向)用户"
    r"(?!去|要|使用|用|安装|运行|执行|手动|自己)",
    r"(?:不要|别|不)让用户(?:知道|发现|察觉)",
    r"(?:对|向)用户(?:隐瞒|保密)|瞒着用户|用户(?:不必|不需要|无需)知道",
)

# --- exfiltration ---------------------------------------------------------------------------

_NET_TOOL = lazy(
    r"\b(?:curl|wget|invoke-webrequest|invoke-restmethod|iwr|irm|nc|ncat|netcat|socat|telnet|"
    r"httpie|xh|http (?:get|post|put|patch)|(?:requests|httpx|axios)\.(?:get|post|put|patch)|"
    r"fetch|urlopen)\b"
)
_SECRET_VAR_RE = lazy(_SECRET_VAR)
#: where a command ends: `;`, `&&`, a pipe, the end of a sentence
_COMMAND_END = lazy(r";|&&|\||。|\. ")
#: the variable is the value of a header or of `--user`: how a token is used, not sent away
_HEADER_OR_USER = lazy(
    r"(?:(?:-h|--header|-headers)[ =]?[\"'@{]?[\w-]{1,40} ?[:=] ?[\"']?(?:[\w-]{1,20} )?"
    r"|(?:-u|--user)[ =]?[\"']?[\w.@-]{0,40}:?)\Z"
)
_URL_IN = lazy(r"(?:https?|ftp|wss?)://([^\s/\"'`]{1,255})(/[^\s\"'`]{0,200})?")
_LOCAL_HOST_RE = lazy(_LOCAL_HOST)


def _trusted_destination(command: str) -> bool:
    """Every URL in `command` is this machine, a private name, or an API of a service."""
    for m in _URL_IN().finditer(command):
        host, path = m[1].rsplit("@", 1)[-1], m[2] or ""
        if _LOCAL_HOST_RE().match(host) or host.startswith("api.") or path.startswith("/api/"):
            continue
        return False
    return True


def _net_tool_with_secret(folded: str) -> bool:
    """curl / wget / nc … with a secret variable, unless the variable is a header or user
    value sent to this machine or to an API (`curl -H "Authorization: Bearer $TOKEN"
    http://localhost:8080/…` is how a token is used)."""
    for tool in _NET_TOOL().finditer(folded):
        command = folded[tool.end() : tool.end() + 240]
        end = _COMMAND_END().search(command)
        if end:
            command = command[: end.start()]
        found = list(_SECRET_VAR_RE().finditer(command))
        if not found:
            continue
        as_header = all(
            _HEADER_OR_USER().search(command, max(0, v.start() - 80), v.start()) for v in found
        )
        if not (as_header and _trusted_destination(command)):
            return True
    return False


_SENSITIVE = (
    rf"(?:\b(?:conversation|chat|history|transcript|secrets?|api keys?|keys|tokens?|"
    rf"credentials?|passwords?|env(?: files?| vars?| variables?)?|environment(?: variables?)?|"
    rf"memory|context|system prompt|prompts?|cookies?|ssh keys?|private keys?)\b|"
    rf"\.env[\w.-]{{0,20}}|{_SECRET_VAR})"
)
_EXFILTRATION = _any(
    # a secret source piped into a network tool: env | base64 | curl -d @- https://…
    rf"(?:\b(?:printenv|env)\b|{_SECRET_VAR}|\bos\.environ\b|~/\.ssh|\.aws[/\\]credentials"
    rf"|\bcat [^|]{{0,80}}?{_SECRET_FILE})[^|]{{0,80}}\|(?: ?[^|]{{1,40}}\|){{0,3}} ?"
    r"(?:curl|wget|nc|ncat|netcat|socat|telnet|xh|http|mail|sendmail)\b",
    # a secret file uploaded: curl -d @$HOME/.aws/credentials, curl -T ~/.kube/config
    r"\b(?:curl|wget|http|xh)\b[^|;]{0,160}?(?:-d|--data(?:-binary|-raw|-urlencode)?|-f|"
    rf"--form|-t|--upload-file|--post-file|--body-file)[= ]?[\"']?(?:[\w-]{{1,30}}=)?@?"
    rf"{_PATH}(?:{_SECRET_FILE}|id_(?:rsa|dsa|ecdsa|ed25519)\b)",
    # markdown image whose URL carries data out: ![x](https://host/p?d=…)
    r"!\[[^\]]{0,100}\]\( ?(?:https?:)?//[^\s)]{1,200}?[?&](?:(?:d|data|q|content|payload|"
    r"msg|message|text|info|leak|exfil|secret|token|key|k|conversation|chat|history|context|"
    r"summary|prompt|memory|env|log|dump)=|[\w.-]{1,30}=[^\s)&]{0,100}?(?:\{|<|\$|%s|\[))",
    # the whole environment posted from code
    r"\b(?:requests|httpx|axios)\.(?:post|put|get|patch)\([^)]{0,200}?"
    r"(?:os\.environ\b(?![\[.])|process\.env\b(?![\[.]))",
    # send / post / email secrets or the conversation somewhere outside
    r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|report|submit|beacon|email|"
    rf"e-mail|mail|push|pipe|sync)\b.{{0,60}}?{_SENSITIVE}.{{0,60}}?\b(?:to|at|into|via) "
    rf"{_DEST}",
    # a secret put into every answer, commit message …
    r"\b(?:include|append|add|put|paste|print|echo|attach|output|write|leak|insert|embed)\b"
    rf"[^.]{{0,30}}?(?:{_SECRET_VAR}|\bprintenv\b|\benv(?:ironment)? var(?:iable)?s\b|"
    r"\bapi keys?\b|\bsecrets\b|\bcredentials\b|\bpasswords\b)[^.]{0,40}?\b(?:in|into|to|"
    r"at the end of|with) (?:every|each|all) ",
    r"\bexfiltrat\w{0,20}",
    # print the conversation history
    r"\b(?:print|output|dump|share|reveal|show|repeat|leak|send|email|paste|echo|disclose|"
    r"export|upload|post|copy|forward) (?:\w{1,40} ){0,3}(?:conversation|chat|session|message) "
    r"(?:history|log|logs|transcript|context|record)s?\b",
    r"\b(?:print|output|dump|reveal|repeat|leak|disclose) (?:\w{1,40} ){0,2}"
    r"(?:hidden instructions|everything above|(?:the|this) (?:whole |entire |full )?"
    r"conversation\b(?! (?:id|ids|identifier|count|name|title|service|api|table|model)\b))",
    # Chinese
    r"(?:密钥|令牌|token|密码|凭据|凭证|环境变量|对话|聊天|会话|\.env|私钥|记忆|上下文|系统提示|"
    r"cookie)[^。]{0,30}?(?:发送|上传|提交|转发|回传|外发|同步|发|传)(?:到|至|给)",
    r"(?:打印|输出|泄露|分享|发送|上传|展示|显示|复述|导出|转发)[^。]{0,8}"
    r"(?:对话|聊天|会话)(?:记录|历史|内容|上下文)",
)

# --- secret reads ---------------------------------------------------------------------------

_READ_VERB = (
    r"(?:\b(?:cat|less|more|head|tail|type|base64|xxd|strings|grep|open|read|print|dump|show|"
    r"display|send|upload|copy|cp|scp|rsync|tar|zip|exfiltrate|echo|get-content|leak|steal|"
    r"collect|harvest|extract|exfil)\b|读取|查看|打开|打印|输出|发送|上传|复制|获取|显示|窃取|收集)"
)
_SECRET_READ = _any(
    rf"{_READ_VERB}(?: (?:the|your|my|user's|all|contents? of|file|files|-[\w=-]{{0,40}}|"
    rf"[\w*|\\][\w.*|\\-]{{0,39}}(?= -| [\"'`~$/.%]))){{0,6}} ?[\"'`(]?{_PATH}{_SECRET_FILE}",
    r"(?:~|\$home|%userprofile%|/home/[\w.-]{1,32}|/root|/users/[\w.-]{1,32})[/\\]\.ssh[/\\]"
    r"(?:id_|[\w.-]{0,40}(?:_key|\.pem)\b)",
    r"\bauthorized_keys\b",
    r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)",
    # searching the home directory for secrets
    r"\b(?:grep|rg|ag|findstr|select-string)\b(?: -[\w-]{1,20}){0,4} [\"']?(?:password|passwd|"
    r"secret|token|api_?key|private key|aws_secret)[\"']?(?: -[\w-]{1,20})? (?:~|\$home|/home|"
    r"/root|/etc|%userprofile%|c:\\users)",
    # the OS keychain
    r"\bsecurity (?:find|dump)-(?:generic-password|internet-password|keychain)\b|"
    r"\bsecret-tool lookup\b",
    r"(?:读取|查看|打开|打印|输出|发送|上传|复制|获取|显示|窃取)[^。]{0,6}"
    r"(?:ssh ?(?:私钥|密钥)|私钥文件)",
)

# --- persistence ----------------------------------------------------------------------------

_WRITE_VERB = (
    r"(?:\b(?:edit|modify|write|writes|append|add|update|change|overwrite|patch|insert|inject|"
    r"rewrite|replace|prepend|alter|tamper with|put|save)\b)"
)
_AGENT_FILE = (
    r"(?:agents\.md|claude\.md|gemini\.md|copilot-instructions\.md|\.cursorrules|"
    r"\.windsurfrules|cordis\.patch\.ya?ml"
    r"|\.claude[/\\]settings(?:\.local)?\.json|\.codex[/\\]config\.toml"
    r"|\.dsh[/\\](?:config|settings|hooks)[\w./-]{0,60}|\.mcp\.json|mcp_servers?\.json"
    r"|claude_desktop_config\.json|\.cursor[/\\]mcp\.json|\.gemini[/\\]settings\.json)"
)
_HARNESS_CONFIG = (
    r"(?:\.claude[/\\]settings(?:\.local)?\.json|\.codex[/\\]config\.toml|\.dsh[/\\]"
    r"(?:config|settings|hooks)[\w./-]{0,60}|\.mcp\.json|mcp_servers?\.json|"
    r"claude_desktop_config\.json|\.cursor[/\\]mcp\.json|\.gemini[/\\]settings\.json)"
)
_FILE = rf"[\"'`]?{_PATH}{_AGENT_FILE}"
_INJECTED = (
    r"(?:rules?|instructions?|directives?|the following|following (?:lines?|text|rules?)|"
    r"these (?:lines?|rules?|instructions?|notes?)|this (?:line|rule|instruction|text|note|"
    r"entry|prompt)|a (?:line|rule|note) (?:saying|that says|telling))"
)
_RC_FILE = (
    r"(?:\.bashrc|\.zshrc|\.profile|\.bash_profile|\.zprofile|config\.fish|crontab|"
    r"/etc/cron[\w./-]{0,30}|launchagents|\.config/autostart)"
)
_PERSISTENCE = _any(
    # shell writes into the files: >> AGENTS.md, tee -a CLAUDE.md, sed -i … .mcp.json
    rf">>? ?{_FILE}",
    rf"\btee(?: -a| --append)? {_FILE}",
    rf"\bsed -i[\w.'\"]{{0,10}} [^|;]{{0,120}}?{_AGENT_FILE}",
    # write rules / the following … into the file
    rf"{_WRITE_VERB}.{{0,40}}?\b{_INJECTED}\b.{{0,40}}?\b(?:to|into|in|inside) {_FILE}",
    # edit the file to add: … / so it persists / to disable the approval prompt
    rf"{_WRITE_VERB}.{{0,40}}?(?<![\w-]){_FILE}.{{0,30}}?(?:\bto (?:add|say|include|state|"
    r"contain|read|tell|instruct|disable|allow|skip|remove|bypass|turn off|auto-?approve|"
    r"always|never|stop|trust|permit)\b|\bwith (?:the )?(?:following|line|text|rule)\b|"
    r"\bso (?:it|they|this|that|these) (?:persists?|sticks?|survives?|always|applies|apply|"
    r"loads?)\b|\bso every (?:agent|session|model)\b)",
    rf"{_WRITE_VERB}.{{0,40}}?(?<![\w-]){_FILE}.{{0,12}}? ?: ?[\"'`]?(?:always|never|do not|"
    r"don't|dont|skip|ignore|disable|allow|push|approve|approval|trust|run|auto|bypass|"
    r"permissions?)",
    # harness configuration opened up: permissions, approvals, hooks
    rf"{_WRITE_VERB}.{{0,60}}?{_HARNESS_CONFIG}.{{0,80}}?\b(?:allow\w{{0,10}}|approv\w{{0,10}}|"
    r"permission\w{0,5}|hooks?|bypass\w{0,10}|dangerous\w{0,10}|never ask|without asking|"
    r"trust\w{0,5}|yolo|full access|all tools|auto-?run)",
    rf"{_WRITE_VERB}.{{0,40}}?\b(?:hooks?|permissions?|allow\w{{0,10}}|approval\w{{0,10}})\b"
    rf".{{0,60}}?\b(?:to|into|in) [\"'`]?{_PATH}{_HARNESS_CONFIG}",
    r"\b(?:edit|modify|change|overwrite|patch|update) (?:the |your )?(?:harness|agent|"
    r"assistant|codex|claude|dsh|mcp)(?:'s)? (?:config|configuration|settings|hooks)\b",
    # something fetched from the network at every login or on a timer
    rf"{_RC_FILE}.{{0,100}}?\b(?:curl|wget|nc|ncat|/dev/tcp|base64 -d)\b",
    rf"\b(?:curl|wget|nc|ncat|/dev/tcp)\b.{{0,120}}?{_RC_FILE}",
    # Chinese
    rf"(?<![\w-]){_AGENT_FILE}[^。]{{0,12}}?(?:写入|追加|添加|加入|注入|加上|写进|插入)[^。]{{0,10}}?"
    r"(?:规则|指令|指示|提示词?|以下|下面|这段|这句|这一行|一行|:)",
    r"(?:写入|追加|添加|加入|注入|加上|写进|插入)[^。]{0,20}?(?:规则|指令|指示|以下|下面这段|这段|"
    rf"这句)[^。]{{0,12}}?(?:到|进|至|入)? ?{_FILE}",
    r"(?:把|将)(?:下面|以下|这段|这句|这些)[^。]{0,10}?(?:写进|写入|加入|追加到|添加到|放进)[^。]{0,4}?"
    rf" ?{_FILE}",
    rf"(?:修改|编辑|更新|改写) ?{_FILE}[^。]{{0,6}}?(?:,|:)? ?(?:加入|写入|追加|添加|加上)"
    r"(?:新的|一条|以下)?(?:规则|指令|指示|:)",
    r"(?:修改|编辑|篡改|覆盖)(?:你的)?(?:代理|智能体|助手|harness)?的?(?:配置|设置|钩子)文件",
)


def _rule(
    name: str, source: str, needles: str, checks: Sequence[Callable[[str], bool]] = ()
) -> Rule:
    """A rule from one pattern and its needles, written `word|word|…` (spaces count)."""
    return Rule(name, (source,), tuple(needles.split("|")), tuple(checks))


#: The rules matched on folded text, in `RULES` order; every repeat in their patterns is
#: bounded or possessive (`tests/test_threats.py` checks), so a scan costs time in proportion
#: to the text.
WORD_RULES: tuple[Rule, ...] = (
    _rule(
        INSTRUCTION_OVERRIDE,
        _INSTRUCTION_OVERRIDE,
        "ignor|disregard|forget|overr|bypass|drop|discard|aside|system|<|[|"
        "you are now|from now on|mode|polic|pretend|user|human|without|"
        "secret from|忽略|无视|忘|理会|绕过|覆盖|抛开|系统|管理员|开发者|你现在|从现在|用户",
    ),
    _rule(
        EXFILTRATION,
        _EXFILTRATION,
        "env|$|~/.ssh|credentials|cat |curl|wget|http|xh|![|environ|process.env|"
        "send|post|upload|forward|transmit|exfil|leak|copy|report|submit|beacon|"
        "mail|push|pipe|sync|print|output|dump|share|reveal|show|repeat|echo|"
        "disclose|export|include|append|add|put|paste|attach|write|insert|embed|"
        "对话|聊天|会话|发|传|交|同步",
        (_net_tool_with_secret,),
    ),
    _rule(
        SECRET_READ,
        _SECRET_READ,
        ".env|netrc|.pgpass|.npmrc|.pypirc|credentials|.vault-token|.docker|"
        ".kube|shadow|passwd|hosts.yml|.ssh|authorized_keys|id_|grep|rg |ag |"
        "findstr|select-string|security |secret-tool|私钥|密钥",
    ),
    _rule(
        PERSISTENCE,
        _PERSISTENCE,
        "agents.md|claude.md|gemini.md|copilot-instructions|.cursorrules|"
        ".windsurfrules|cordis.patch|.claude|.codex|.dsh|mcp|.cursor|.gemini|"
        "config|settings|hooks|rc|profile|cron|launchagents|autostart|文件",
    ),
)


def _secret_families(text: str) -> list[str]:
    # Imported here: the redactor is the single owner of secret shapes, and the lazy import
    # keeps this module cheap to import for callers that never scan.
    from huiyi.safety.redact import secret_families

    return secret_families(text)


def scan(
    text: str,
    *,
    secret_families: Callable[[str], list[str]] | None = None,
    meaning: Meaning | None = None,
) -> list[str]:
    """Names of every rule `text` breaks, in `RULES` order; empty when the text is clean.

    `meaning` (`huiyi.safety.meaning`) adds the intents the embedding model finds; it is asked
    only when no rule has refused the text already, so a refused write costs no embedding."""
    found: list[str] = []
    if not text.isascii() and INVISIBLE.search(text):
        found.append(INVISIBLE_UNICODE)
    if (secret_families or _secret_families)(unicodedata.normalize("NFKC", text)):
        found.append(HARD_CODED_SECRET)
    folded = fold(text)
    found.extend(rule.name for rule in WORD_RULES if rule.search(folded))
    found.extend(_INTENT_RULES[intent] for intent in intents(text))
    if meaning is not None and not found:
        found.extend(_INTENT_RULES[intent] for intent in meaning.intents(text))
    return [rule for rule in RULES if rule in found]


def scan_together(texts: Sequence[str], *, meaning: Meaning | None = None) -> list[str]:
    """Rules that several texts break only together (an attack split across the entries of one
    batch): the rules of the texts joined, less those any text breaks alone. The texts are
    joined by ` ;` lines, so one command does not run on into the next entry, but a pipeline
    or a sentence split between two entries is read whole."""
    if len(texts) < 2:
        return []
    alone = {rule for text in texts for rule in scan(text, meaning=meaning)}
    return [rule for rule in scan("\n;\n".join(texts), meaning=meaning) if rule not in alone]


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
    PERSISTENCE: "writes instructions into agent files or opens up harness configuration",
    HARD_CODED_SECRET: "contains a secret (API key, token, password or private key)",
    INVISIBLE_UNICODE: "contains invisible characters (zero-width, bidirectional or tag)",
    WEAKEN_CHECKS: "switches off or goes around tests, hooks or CI checks",
    RELAX_RULE: "relaxes a safety rule (secrets may be printed, committed or shown)",
}
