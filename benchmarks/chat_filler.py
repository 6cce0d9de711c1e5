"""The filler of the side-by-side benchmark's history: chat about ordinary backend work.

A person and a coding agent talk in Chinese, English or both about one shop's backend: deploys,
migrations, rollbacks, locks, tables, logins, caches, tests. Lines are composed from templates
written as such sessions read (requests, acknowledgements, pasted errors, an agent's short
"let me look" before a tool call and its summaries after, some of them long with a list of
changes and a code block) and from slot words (files, functions, tables, commands, errors,
numbers), so a history of 100k messages is varied and one seed always writes the same one.
Tool output is shaped like the tool's: numbered file lines, test runs, `git log`, `kubectl`,
`psql` tables, grep matches.

`VOCABULARY` is every template and slot word joined: whatever the filler writes is made of its
words and characters only (numbers and hex ids aside), which is what lets `check_needles` prove
that a needle's key word never occurs in the filler. The filler never uses the needles' key
words and, to keep two-character Chinese words out, never the characters
熔 断 灰 幂 费 组 向 理 连 池 (one of each pair in 熔断器, 灰度, 幂等, 消费者组, 反向代理,
连接池).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _items(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split("|"))


SLOTS: dict[str, tuple[str, ...]] = {
    "svc": _words(
        "orders payments users auth catalog cart shipping notifications search reports admin "
        "checkout"
    ),
    "table": _words(
        "orders order_items users sessions addresses coupons audit_log products inventory "
        "payments shipments"
    ),
    "col": _words(
        "created_at updated_at user_id order_id status email price_cents sku coupon_code "
        "last_login_at locale memo serial_no"
    ),
    "file": _words(
        "src/app/main.py src/orders/models.py src/orders/views.py orders.py src/auth/login.py "
        "src/users/service.py src/cart/handlers.py config/settings.py config/settings.prod.py "
        "src/app/db.py src/app/cache.py migrations/0042_add_orders_status_index.py "
        "migrations/0043_users_locale.py tests/test_orders.py tests/test_auth.py "
        "tests/conftest.py web/src/components/PriceTag.tsx web/src/pages/Checkout.tsx "
        "web/vite.config.ts src/render/fonts.py deploy/k8s/orders.yaml docker-compose.yml "
        "Dockerfile Makefile scripts/seed_db.py"
    ),
    "func": _words(
        "create_order get_user apply_coupon lookup_price render_page refresh_cache "
        "acquire_lock run_migration send_email load_settings serialize_order "
        "check_permissions getUserName formatPrice useCart OrderSerializer Foo.bar HTTPServer "
        "snake_case_name login_required"
    ),
    "cmd": _items(
        "pytest -q | pytest tests/test_orders.py -x | make ship | make test | "
        "docker compose up | docker compose up -d | git rebase -i | git status | "
        "alembic upgrade head | alembic downgrade -1 | npm run build | ruff check . | "
        "kubectl get pods -n staging | kubectl rollout status deploy/orders | "
        "git log --oneline -5 | redis-cli info memory | git commit --no-verify"
    ),
    "env": _items("staging | prod | dev | the staging cluster | the canary"),
    "zh_env": _words("测试环境 预发 线上 staging 本地"),
    "err": _items(
        "E1234 | TimeoutError | IntegrityError | 502 Bad Gateway | 504 Gateway Timeout | "
        "OOMKilled | ConnectionResetError | KeyError: 'user_id' | AssertionError | "
        "deadlock detected | lock wait timeout exceeded | ModuleNotFoundError"
    ),
    "dep": _words(
        "sqlalchemy alembic redis celery pydantic fastapi requests react vite pytest uvicorn "
        "psycopg"
    ),
    "ver": _words("2.0.3 1.14 3.11 0.9.2 5.1.0 18.3 2.31"),
    "branch": _words("main fix/order-timeout feat/coupons release/2.3 chore/bump-deps"),
    "topic": _items(
        "the migration | the deploy | the rollback | the cache | login | the orders table | "
        "the index | the lock | the config | the tests | the logs | the alert | permissions | "
        "the release | the queue | the worker | the settings page | the font subset | "
        "the bundle | the price lookup | the runner"
    ),
    "zh_topic": _words(
        "迁移 部署 回滚 缓存 登录 订单表 索引 锁 配置 测试 日志 告警 权限 接口 发布 队列 构建 监控"
    ),
    "envvar": _words("DATABASE_URL REDIS_URL LOG_LEVEL CACHE_TTL WORKERS SENTRY_DSN"),
}

# the lines of a session, by who writes them and how long they are --------------------------

EN_SHORT = (
    "ok",
    "ok go ahead",
    "looks good, commit it",
    "yes",
    "sure",
    "continue",
    "lgtm",
    "do it",
    "thanks!",
    "perfect",
    "wait",
    "try again",
    "no, revert that",
    "ship it",
    "nice, that works",
    "hmm",
    "go on",
    "ok now run the tests",
)
ZH_SHORT = (
    "继续",
    "好的",
    "可以",
    "行",
    "先这样",
    "提交吧",
    "不对",
    "再试一次",
    "嗯",
    "好，跑一下测试",
    "没问题",
    "先别提交",
    "对，就这样",
    "等一下",
    "回退一下",
)
EN_ASK = (
    "can you check why {func} is slow on {env}?",
    "tests are failing again: {err} in {file}",
    "run `{cmd}` and tell me what breaks",
    "let's add an index on {table}.{col}, that query takes {ms}ms at p99",
    "hmm that's not right, {func} should return None when the user is missing",
    "what's the status of the {svc} migration?",
    "the deploy to {env} got stuck at {pct}%, any idea?",
    "please don't touch {file}, someone else is working on it",
    "revert that last change, it broke login on {env}",
    "is the lock on {table} still held? check pg_locks",
    "why does {func} call the db twice per request?",
    "bump {dep} to {ver} and see if anything breaks",
    "the alert for {svc} fired again last night, {err} in the logs",
    "can we move {func} out of {file}? it's getting too big",
    "add a test for {func} with an empty cart",
    "what does {envvar} default to in config/settings.py?",
    "login on {env} returns {err} for some users, only since this morning",
    "the {svc} worker keeps restarting, memory goes up to {n}00MB and then OOMKilled",
    "rename {col} to something clearer, it's confusing in the serializer",
    "write the migration for the new {col} column on {table}, nullable first",
    "the font subset is missing some glyphs on the checkout page",
    "the bundle got bigger after the last merge, can you check what pulled it in?",
    "the runner on CI is stuck again, can you look at the job output?",
    "we need the settings page to show the cluster name",
    "double check the price lookup uses the cached value",
    "can you review the diff before I merge {branch}?",
    "where do we set the timeout for {svc} calls?",
    "configure the runner to keep the pip cache between jobs",
    "which setting controls the retry count for {svc}?",
    "the rollback script should also clear the cache, right?",
)
ZH_ASK = (
    "帮我看一下 {file} 里 {func} 为什么在{zh_env}上超时",
    "{svc} 服务的迁移跑完了吗？",
    "测试又挂了，报 {err}，你先看看日志",
    "先别动 {table} 表，等我确认一下",
    "这个改动能不能拆成两个提交？",
    "给 {table} 的 {col} 加个索引，现在查得很慢，p99 {ms}ms",
    "部署到{zh_env}之后登录页偶尔 502，帮我查下",
    "缓存的过期时间是多少？我记得之前设的是 {n} 分钟",
    "用 `{cmd}` 跑一下，看看还有没有失败的",
    "回滚之前先备份一下数据库",
    "这个锁等待是哪来的？{table} 上好像有长事务",
    "配置文件里 {envvar} 是不是没生效",
    "今天先到这，明天再看 {svc} 的告警",
    "{func} 的返回值不对，应该是空列表而不是 None",
    "把 {dep} 升到 {ver} 试试，看看有没有兼容问题",
    "{svc} 的 worker 一直重启，日志里全是 {err}",
    "这个迁移在{zh_env}要跑多久？{table} 表有几百万行",
    "帮我写个脚本，把 {table} 里 {col} 为空的记录找出来",
    "登录接口在{zh_env}有点慢，看看是不是缓存没命中",
    "发布之前再确认一遍测试都过了",
    "{branch} 分支合并之前帮我看一下 diff",
    "为什么 {func} 每次请求都要查两次数据库？",
    "这个告警阈值是不是设得太低了，一晚上响了 {n} 次",
    "权限检查放在 {func} 里合适吗？",
    "把 {file} 里重复的代码抽出来",
    "字体 subset 之后 bundle 小了多少？",
    "CI 的 runner 又卡住了，你看看是哪一步",
    "settings 页面要显示当前 cluster 的名字",
)
MIXED_ASK = (
    "{func} 这个函数的 error handling 有问题，{err} 直接抛到前端了",
    "帮我 review 一下 {branch}，主要看 migration 那部分",
    "{table} 的 {col} 要不要加 unique constraint？",
    "跑一下 `{cmd}`，then fix whatever fails",
    "{env} 上的 {svc} latency 又上去了，p95 {ms}ms",
    "rollback 之后 cache 要不要清？",
    "这个 PR 的 test coverage 不够，加几个 case",
    "lock 的 timeout 改成 {n}s 试试",
    "{dep} {ver} 有个 breaking change，看一下 changelog",
    "login 页面的 render 太慢了，先 profile 一下",
)
LOG_LINES = (
    "{stamp} ERROR {svc}.worker {err} while handling order {n}{n}",
    "{stamp} WARN  {svc}.api slow query on {table} ({ms} ms)",
    "{stamp} INFO  {svc}.api GET /api/{svc}/{n} 200 {ms}ms",
    "{stamp} ERROR {svc}.api POST /api/{svc} 500: {err}",
    '  File "/app/{file}", line {n}{n}, in {func}',
    "    raise {err}",
    "{stamp} INFO  alembic.runtime.migration Running upgrade -> {n}{n}, add {col} to {table}",
)
EN_PASTE = (
    "I'm seeing this on {env}:\n```\n{log}\n```\nany idea?",
    "this is what the logs say:\n{log}",
    "got this after the deploy:\n```\n{log}\n```",
)
ZH_PASTE = (
    "{zh_env}的日志：\n```\n{log}\n```\n帮我看看是什么问题",
    "报错如下，{func} 那里挂的：\n{log}",
    "部署之后一直出这个：\n```\n{log}\n```",
)

EN_PREFACE = (
    "Let me look at `{file}` first.",
    "I'll run the tests to see the current state.",
    "Checking the logs on {env}.",
    "Let me search for where `{func}` is called.",
    "Let me check how `{col}` is used before changing it.",
    "I'll read the migration and the model together.",
    "Running `{cmd}` now.",
    "Now the test.",
    "Let me make that edit.",
)
ZH_PREFACE = (
    "我先看一下 `{file}`。",
    "先跑一下测试确认现状。",
    "我查一下 `{func}` 在哪里被调用。",
    "看看{zh_env}的日志。",
    "我先确认 `{col}` 在哪些地方用到。",
    "跑一下 `{cmd}`。",
    "改一下这里。",
    "再跑一遍测试。",
)
EN_ANSWER = (
    "Done. `{func}` now checks the lock before writing, and `{cmd}` passes.",
    "The failure is in `{file}`: `{func}` reads `{col}` before the migration adds it.",
    "Found it: the {svc} worker retries without backoff, so every timeout turns into {n} requests.",
    "All {n}{n} tests pass. I didn't touch {file}.",
    "The index on {table}.{col} brings the query from {ms}ms down to about {n}ms.",
    "{topic} looks fine on {env}; the {err} came from a worker that was still on the old image.",
    "I reverted the change to `{func}`; login works again on {env}.",
    "The lock is held by a long transaction from the report job; it started {n} minutes ago.",
    "`{envvar}` defaults to an empty string, so the settings fall back to the dev value.",
    "That was a stale cache entry: `{func}` now refreshes it when the price changes.",
    "Committed on `{branch}`.",
    "Yes, the rollback script clears the cache too (see `{file}`).",
    "The bundle grew because `{dep}` was imported from the page instead of lazily.",
    "Good catch, fixed.",
)
ZH_ANSWER = (
    "改好了，{table} 表加了 `{col}` 的索引，测试全部通过。",
    "问题在 `{file}`：`{func}` 在迁移加字段之前就读了 `{col}`。",
    "已经回滚了，登录在{zh_env}恢复正常。",
    "原因是缓存没有失效，`{func}` 改成价格变化时刷新缓存。",
    "锁是报表任务的长事务拿着的，已经跑了 {n} 分钟。",
    "{n}{n} 个测试都过了，{file} 没有动。",
    "`{envvar}` 默认是空字符串，所以配置回退到了 dev 的值。",
    "已经提交到 `{branch}`。",
    "{zh_topic}那边我看了，没有问题，{err} 是旧镜像的 worker 报的。",
    "好的，已经改了。",
    "查询从 {ms}ms 降到了 {n}ms 左右。",
    "这个告警是因为阈值太低，我调到了 {n}{n}。",
)
EN_POINTS = (
    "`{file}`: `{func}` takes the lock before it writes",
    "new migration for `{table}.{col}` (nullable first, backfilled in chunks of {n}000)",
    "`{func}` returns early when the user is missing",
    "tests for the empty cart and the expired coupon",
    "`{envvar}` is read once at start-up instead of on every request",
    "the cache key includes the locale now",
    "bumped `{dep}` to {ver}; nothing else changed in the lock file",
    "removed the retry loop in `{func}`; the worker's own retry is enough",
    "the settings page shows the cluster name from the config",
    "the price lookup goes through the cache first",
    "the font subset keeps the glyphs the checkout page uses",
)
ZH_POINTS = (
    "`{file}`：`{func}` 写之前先拿锁",
    "新增迁移，给 `{table}` 加 `{col}`（先允许为空，再分批回填）",
    "`{func}` 在用户不存在时直接返回",
    "补了空购物车和过期优惠券的测试",
    "`{envvar}` 只在启动时读一次",
    "缓存的 key 加上了 locale",
    "`{dep}` 升到了 {ver}",
    "去掉了 `{func}` 里的重试，worker 自己会重试",
    "settings 页面显示当前 cluster",
    "价格查询先走缓存",
)
EN_OPEN = (
    "Here's what I changed:",
    "The root cause: `{func}` ran inside the request's transaction, so {topic} waited on the "
    "lock until the request finished. What I changed:",
    "I went through {topic} end to end. Summary:",
    "The migration is ready. It does three things:",
    "Tests pass now (`{cmd}`). Changes:",
)
ZH_OPEN = (
    "改动如下：",
    "原因是 `{func}` 在请求的事务里执行，{zh_topic}要等请求结束才释放锁。改动：",
    "我把{zh_topic}从头到尾看了一遍，总结一下：",
    "迁移写好了，做了这几件事：",
    "测试已经通过（`{cmd}`），改了这些：",
)
EN_CLOSE = (
    "Want me to also add a test for the rollback path?",
    "I haven't deployed anything; `{cmd}` is the next step when you're ready.",
    "One thing to watch: the backfill holds a row lock per chunk, so run it off-peak.",
    "Let me know if you want this split into two commits.",
    "Nothing else in {file} needed to change.",
)
ZH_CLOSE = (
    "要不要顺便给回滚加个测试？",
    "还没有部署，需要的话下一步跑 `{cmd}`。",
    "注意回填会按批次加行锁，最好在低峰期跑。",
    "需要的话可以拆成两个提交。",
    "{file} 其他地方不用改。",
)
CODE_BLOCKS = (
    "```python\ndef {func}(order_id: int) -> dict:\n    with db.transaction():\n"
    '        row = db.fetch_one("SELECT * FROM {table} WHERE id = %s", order_id)\n'
    "        if row is None:\n            return {{}}\n        return serialize(row)\n```",
    "```sql\nCREATE INDEX CONCURRENTLY idx_{table}_{col} ON {table} ({col});\n```",
    '```python\ndef upgrade():\n    op.add_column("{table}", sa.Column("{col}", sa.Text(), '
    'nullable=True))\n\n\ndef downgrade():\n    op.drop_column("{table}", "{col}")\n```',
    "```ts\nexport function formatPrice(cents: number, locale: string): string {{\n"
    "  return new Intl.NumberFormat(locale).format(cents / 100);\n}}\n```",
    '```yaml\n{svc}:\n  replicas: {n}\n  env:\n    {envvar}: "{n}"\n```',
)
TITLES = (
    "Fix {func} timeout on {env}",
    "Add index on {table}.{col}",
    "Rollback of {svc} migration",
    "Debug login errors",
    "{svc} worker memory",
    "Bump {dep} to {ver}",
    "排查{zh_topic}问题",
    "{svc} 迁移",
    "登录超时",
    "{table} 表加索引",
    "Review {branch}",
    "Settings page cluster name",
)
COMMITS = (
    "fix: {func} handles a missing {col}",
    "chore: bump {dep} to {ver}",
    "feat({svc}): add {col} to {table}",
    "revert: migration {n}{n}",
    "test: cover {func}",
    "refactor: move {func} out of {file}",
    "fix(auth): login redirect loop",
)
CODE_LINES = (
    "def {func}(request):",
    "    user = get_user(request.user_id)",
    "    if not user:",
    "        return None",
    '    with acquire_lock("{table}"):',
    "        rows = db.query(\"SELECT {col} FROM {table} WHERE status = 'open'\")",
    "    cache.set(key, value, ttl=settings.CACHE_TTL)",
    '    return render_page("checkout", price=lookup_price(item.sku))',
    "class OrderSerializer(Serializer):",
    '    fields = ("id", "{col}", "status")',
    "import {dep}",
    "from src.app.db import session",
    '    raise PermissionError("not allowed")',
    '    logger.info("{svc} done in %s ms", elapsed)',
)
TOOL_OUTPUT_TEXT = (
    "tests/test_orders.py::test_{func} PASSED",
    "FAILED tests/test_orders.py::test_{func} - {err}",
    "{n} passed, {n} warnings in {n}.{n}s",
    "{n} failed, {n}{n} passed in {n}.{n}s",
    "NAME                      READY   STATUS             RESTARTS   AGE",
    "{svc}-7d9f8c-x2k4p        1/1     Running            0          {n}h",
    "{svc}-worker-5b6c-q8z1t   0/1     CrashLoopBackOff   {n}          {n}m",
    'deployment "{svc}" successfully rolled out',
    'Waiting for deployment "{svc}" rollout to finish: {n} of {n} updated replicas are '
    "available...",
    " {col} | count",
    "({n} rows)",
    "INFO  [alembic.runtime.migration] Running upgrade -> {n}{n}, add {col} to {table}",
    "Found {n} errors.",
    "All checks passed!",
    "used_memory_human:{n}.{n}M",
    "On branch {branch}",
    "nothing to commit, working tree clean",
    "The file {file} has been updated successfully.",
)
#: the words of log lines' stamps and levels (numbers and hex ids are drawn as they are written)
EXTRA = "ERROR WARN INFO 2026-11-03T12:04:05Z"

VOCABULARY = "\n".join(
    [
        *(v for values in SLOTS.values() for v in values),
        *EN_SHORT, *ZH_SHORT, *EN_ASK, *ZH_ASK, *MIXED_ASK, *LOG_LINES, *EN_PASTE, *ZH_PASTE,
        *EN_PREFACE, *ZH_PREFACE, *EN_ANSWER, *ZH_ANSWER, *EN_POINTS, *ZH_POINTS, *EN_OPEN,
        *ZH_OPEN, *EN_CLOSE, *ZH_CLOSE, *CODE_BLOCKS, *TITLES, *COMMITS, *CODE_LINES,
        *TOOL_OUTPUT_TEXT, EXTRA,
    ]
)  # fmt: skip

_SLOT = re.compile(r"\{(\w+)\}")


class Writer:
    """Fills templates from one seeded generator; a session keeps its language leaning."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.zh = 0.5  # the share of this session's lines written in Chinese

    def start_session(self) -> None:
        self.zh = self.rng.choice((0.05, 0.3, 0.6, 0.9))

    def fill(self, template: str) -> str:
        """The template with each slot filled (the same slot twice gets the same word)."""
        chosen: dict[str, str] = {}

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in chosen:
                chosen[name] = self._slot(name)
            return chosen[name]

        # `{{` and `}}` (the code blocks' braces) stay as written, then become single
        text = _SLOT.sub(value, template.replace("{{", "\0").replace("}}", "\1"))
        return text.replace("\0", "{").replace("\1", "}")

    def _slot(self, name: str) -> str:
        rng = self.rng
        if name == "n":
            return str(rng.choice((rng.randint(1, 9), rng.randint(2, 60))))
        if name == "ms":
            return str(rng.randint(40, 4000))
        if name == "pct":
            return str(rng.randint(10, 95))
        if name == "stamp":
            return f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:" + (
                f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
            )
        if name == "log":
            return "\n".join(self.fill(rng.choice(LOG_LINES)) for _ in range(rng.randint(2, 8)))
        return rng.choice(SLOTS[name])

    def _pick(self, en: tuple[str, ...], zh: tuple[str, ...]) -> str:
        return self.fill(self.rng.choice(zh if self.rng.random() < self.zh else en))

    # what each side writes -------------------------------------------------------------------

    def title(self) -> str:
        return self.fill(self.rng.choice(TITLES))

    def prompt(self) -> str:
        """A person's message: a few words, a request, or a pasted log with a question."""
        roll = self.rng.random()
        if roll < 0.25:
            return self._pick(EN_SHORT, ZH_SHORT)
        if roll < 0.35:
            return self.fill(self.rng.choice(MIXED_ASK))
        if roll < 0.88:
            ask = self._pick(EN_ASK, ZH_ASK)
            if self.rng.random() < 0.2:  # two requests in one message
                ask += " " + self._pick(EN_ASK, ZH_ASK)
            return ask
        return self._pick(EN_PASTE, ZH_PASTE)

    def preface(self) -> str:
        """What the agent says before a tool call."""
        return self._pick(EN_PREFACE, ZH_PREFACE)

    def answer(self) -> str:
        """The agent's reply after its tool calls: mostly a line or a few, sometimes a long
        summary (what was wrong, a list of changes, a code block, what to watch, a question
        back), in one language."""
        rng = self.rng
        zh = rng.random() < self.zh
        answers = ZH_ANSWER if zh else EN_ANSWER
        roll = rng.random()
        if roll < 0.55:
            return self.fill(rng.choice(answers))
        if roll < 0.8:
            return " ".join(self.fill(a) for a in rng.sample(answers, rng.randint(2, 4)))
        opening, points, closing = (
            (ZH_OPEN, ZH_POINTS, ZH_CLOSE) if zh else (EN_OPEN, EN_POINTS, EN_CLOSE)
        )
        parts = [self.fill(rng.choice(opening)), ""]
        parts += [f"- {self.fill(p)}" for p in rng.sample(points, rng.randint(2, 8))]
        for block in rng.sample(CODE_BLOCKS, rng.choice((0, 1, 1, 2))):
            parts += ["", self.fill(block)]
        if rng.random() < 0.5:
            parts += ["", " ".join(self.fill(a) for a in rng.sample(answers, rng.randint(1, 4)))]
        if rng.random() < 0.3:  # the test run it ends with
            parts += ["", "```", self._command_output(), "```"]
        parts += ["", self.fill(rng.choice(closing))]
        return "\n".join(parts)

    def tool_call(self, cwd: str) -> tuple[str, dict[str, str], Callable[[], str]]:
        """A tool's name, its input, and how to write its output."""
        rng = self.rng
        tool = rng.choice(("Read", "Read", "Bash", "Bash", "Bash", "Grep", "Edit"))
        if tool == "Bash":
            command = self.fill("{cmd}")
            return tool, {"command": command, "description": "Run it"}, self._command_output
        if tool == "Grep":
            pattern = self.fill("{func}")
            return tool, {"pattern": pattern, "path": cwd}, lambda: self._grep(pattern)
        path = f"{cwd}/{self.fill('{file}')}"
        if tool == "Edit":
            edit = {"file_path": path, "old_string": self._code(1), "new_string": self._code(1)}
            return tool, edit, lambda: f"The file {path} has been updated successfully."
        return tool, {"file_path": path}, lambda: self._numbered(self._code(rng.randint(4, 40)))

    def _code(self, lines: int) -> str:
        return "\n".join(self.fill(self.rng.choice(CODE_LINES)) for _ in range(lines))

    def _numbered(self, code: str) -> str:
        start = self.rng.randint(1, 200)
        return "\n".join(f"{start + i:>6}\u2192{line}" for i, line in enumerate(code.split("\n")))

    def _grep(self, pattern: str) -> str:
        rng = self.rng
        hits = [
            f"{self.fill('{file}')}:{rng.randint(1, 400)}:    {pattern}({self.fill('{col}')})"
            for _ in range(rng.randint(1, 6))
        ]
        return "\n".join(hits)

    def _command_output(self) -> str:
        rng = self.rng
        if rng.random() < 0.2:
            return "\n".join(
                f"{rng.getrandbits(28):07x} {self.fill(rng.choice(COMMITS))}" for _ in range(5)
            )
        lines = rng.randint(1, 12)
        return "\n".join(self.fill(rng.choice(TOOL_OUTPUT_TEXT)) for _ in range(lines))
