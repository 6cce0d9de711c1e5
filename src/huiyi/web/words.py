"""The page's words in English and Chinese, picked from the browser's language or the
person's choice (a cookie set by the language switch).

Only the interface is translated; what the core says (a refusal's reasons, a search note) stays
in its own words. A test checks that both languages have every key.
"""

from __future__ import annotations

from huiyi.model import COMPACTED_MARK, INJECTED_MARK

__all__ = ["LANGS", "TEXT", "Words", "pick"]

LANGS = ("en", "zh")

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "nav.label": "Views",
        "nav.memory": "Memory",
        "nav.search": "Search",
        "nav.sessions": "Sessions",
        "nav.status": "Status",
        "lang.switch": "中文",
        "skip": "Skip to content",
        "untitled": "(untitled)",
        "error.notfound": "No such session (or it is private).",
        "memory.title": "Memory",
        "memory.user": "User profile (every workspace)",
        "memory.memory": "This workspace's notes",
        "memory.workspace": "Workspace",
        "memory.choose": "Show",
        "memory.budget": "Characters used of the limit",
        "memory.chars": "chars",
        "memory.none": "No entries.",
        "memory.new": "New entry",
        "memory.add": "Add",
        "memory.edit": "Edit",
        "memory.save": "Save",
        "memory.delete": "Delete",
        "memory.confirm": "Delete this entry?",
        "memory.really": "Yes, delete",
        "memory.restore": "Restore",
        "memory.archive": "Archive",
        "memory.archived": "archived",
        "memory.search": "Search memory",
        "memory.hits": "Memory search results",
        "memory.nohits": "No entry (current or archived) matches.",
        "memory.secret": "Holds a secret this page does not show: edit it in the file.",
        "search.title": "Search",
        "search.label": "Search history",
        "search.placeholder": "Words, a phrase in quotes, 中文 or English",
        "search.go": "Search",
        "search.filters": "Filters",
        "search.workspace": "Workspace",
        "search.all": "All workspaces",
        "search.source": "Source",
        "search.any": "Any",
        "search.since": "From",
        "search.until": "To",
        "search.layer": "Layer",
        "search.ran": "Searched with:",
        "search.nohits": "Nothing in this history matches these words.",
        "layer.hybrid": "all layers, fused",
        "layer.lexical": "lexical",
        "layer.fuzzy": "fuzzy",
        "layer.semantic": "semantic",
        "sessions.title": "Sessions",
        "sessions.none": "No sessions yet: run `huiyi index`.",
        "sessions.events": "{} events",
        "sessions.subagents": "{} subagent sessions",
        "sessions.subagent": "subagent",
        "sessions.more": "Showing the {} most recent sessions.",
        "reader.first": "First page",
        "reader.next": "Next page",
        "reader.pages": "Pages",
        "reader.none": "No events from here on.",
        "reader.compacted": COMPACTED_MARK,
        "reader.injected": INJECTED_MARK,
        "reader.cut": "[{} more characters not shown]",
        "kind.user": "User",
        "kind.assistant": "Assistant",
        "kind.tool_call": "Tool call",
        "kind.tool_result": "Tool result",
        "kind.summary": "Compaction summary",
        "kind.title": "Title",
        "kind.other": "Other",
        "status.title": "Status",
        "status.index": "Index",
        "status.sessions": "Sessions",
        "status.events": "Events",
        "status.private": "Private sessions (never shown)",
        "status.workspaces": "Workspaces",
        "status.size": "Index size",
        "status.last": "Last indexed",
        "status.embeddings": "Embedding coverage",
        "status.nomodel": "no embedder",
        "status.sources": "Sources",
        "status.source": "Source",
        "status.where": "Looked in",
        "status.bad": "Bad lines by reason",
        "status.found": "found",
        "status.missing": "not found",
        "status.memory": "Memory files",
        "status.activity": "Activity",
        "status.scope": "Workspace",
        "status.everywhere": "every workspace",
        "status.show": "Show",
        "status.noactivity": "No messages indexed here yet.",
        "status.bar": "{}: {} {} messages",
        "status.embedded": "{} embedded ({} of {} messages)",
        "status.picture": "Messages per day, {} to {}: {}; {} embedded.",
        "status.demo": "The bundled demo history: {} sessions in {}. No agent logs were "
        "found yet; once they are, each workspace shows its own. `{}` removes the demo.",
    },
    "zh": {
        "nav.label": "视图",
        "nav.memory": "记忆",
        "nav.search": "搜索",
        "nav.sessions": "会话",
        "nav.status": "状态",
        "lang.switch": "English",
        "skip": "跳到内容",
        "untitled": "(无标题)",
        "error.notfound": "没有这个会话(或它是私密的)。",
        "memory.title": "记忆",
        "memory.user": "用户档案(所有工作区)",
        "memory.memory": "本工作区的笔记",
        "memory.workspace": "工作区",
        "memory.choose": "显示",
        "memory.budget": "已用字符占上限",
        "memory.chars": "字符",
        "memory.none": "没有条目。",
        "memory.new": "新条目",
        "memory.add": "添加",
        "memory.edit": "编辑",
        "memory.save": "保存",
        "memory.delete": "删除",
        "memory.confirm": "删除这条?",
        "memory.really": "确定删除",
        "memory.restore": "恢复",
        "memory.archive": "归档",
        "memory.archived": "已归档",
        "memory.search": "搜索记忆",
        "memory.hits": "记忆搜索结果",
        "memory.nohits": "没有匹配的条目(当前或已归档)。",
        "memory.secret": "含有本页不显示的密钥:请在文件中编辑。",
        "search.title": "搜索",
        "search.label": "搜索历史",
        "search.placeholder": "关键词、加引号的短语,中文或英文",
        "search.go": "搜索",
        "search.filters": "筛选",
        "search.workspace": "工作区",
        "search.all": "所有工作区",
        "search.source": "来源",
        "search.any": "任意",
        "search.since": "从",
        "search.until": "到",
        "search.layer": "检索层",
        "search.ran": "使用的检索层:",
        "search.nohits": "这段历史里没有与这些词匹配的内容。",
        "layer.hybrid": "全部融合",
        "layer.lexical": "词法",
        "layer.fuzzy": "模糊",
        "layer.semantic": "语义",
        "sessions.title": "会话",
        "sessions.none": "还没有会话:运行 `huiyi index`。",
        "sessions.events": "{} 个事件",
        "sessions.subagents": "{} 个子代理会话",
        "sessions.subagent": "子代理",
        "sessions.more": "只显示最近的 {} 个会话。",
        "reader.first": "第一页",
        "reader.next": "下一页",
        "reader.pages": "分页",
        "reader.none": "此后没有事件。",
        "reader.compacted": "已压缩",
        "reader.injected": "宿主注入",
        "reader.cut": "[还有 {} 个字符未显示]",
        "kind.user": "用户",
        "kind.assistant": "助手",
        "kind.tool_call": "工具调用",
        "kind.tool_result": "工具结果",
        "kind.summary": "压缩摘要",
        "kind.title": "标题",
        "kind.other": "其他",
        "status.title": "状态",
        "status.index": "索引",
        "status.sessions": "会话",
        "status.events": "事件",
        "status.private": "私密会话(从不显示)",
        "status.workspaces": "工作区",
        "status.size": "索引大小",
        "status.last": "最近索引",
        "status.embeddings": "向量覆盖率",
        "status.nomodel": "没有嵌入模型",
        "status.sources": "来源",
        "status.source": "来源",
        "status.where": "查找位置",
        "status.bad": "坏行(按原因)",
        "status.found": "找到",
        "status.missing": "不存在",
        "status.memory": "记忆文件",
        "status.activity": "活动",
        "status.scope": "工作区",
        "status.everywhere": "所有工作区",
        "status.show": "显示",
        "status.noactivity": "这里还没有索引任何消息。",
        "status.bar": "{}：{} {} 条消息",
        "status.embedded": "已嵌入 {}（{}/{} 条消息）",
        "status.picture": "每天的消息，{} 至 {}：{}；已嵌入 {}。",
        "status.demo": "内置演示历史：{} 个会话，位于 {}。尚未找到代理日志；"
        "找到后每个工作区显示自己的历史。`{}` 可删除演示。",
    },
}


class Words:
    """The interface words of one language: `words("key", *values)`."""

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in TEXT else "en"
        self._table = TEXT[self.lang]

    def __call__(self, key: str, *values: object) -> str:
        text = self._table[key]
        return text.format(*values) if values else text

    def other(self) -> str:
        """The language the switch offers."""
        return "en" if self.lang == "zh" else "zh"


def pick(chosen: str | None, accept_language: str) -> Words:
    """The person's choice when made, else the first language of `Accept-Language` we have
    (`zh-CN,zh;q=0.9` is Chinese), else English."""
    if chosen in TEXT:
        return Words(chosen)
    ranked: list[tuple[float, int, str]] = []
    for n, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                weight = 0.0
        ranked.append((-weight, n, tag.strip().lower().split("-")[0]))
    for _, _, lang in sorted(ranked):
        if lang in TEXT:
            return Words(lang)
    return Words("en")
