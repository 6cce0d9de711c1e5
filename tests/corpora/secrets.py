# ruff: noqa: E501 (a corpus: one case per line reads best)
"""Secrets as sessions hold them, by family, and ordinary text that holds none.

`cases()` builds several hundred texts, each with one synthetic secret planted the way people
and tools really write it: on the command line of a database client or an archiver, in a
Chinese sentence, in XML and Markdown tables, in URLs whose passwords hold `@` or `#`, in
`.npmrc`, kube and docker configs and connection strings, as a vendor token of a family the
rules did not name, as hex or base64, and the named families again behind every disguise the
normaliser must see through (full width, NBSP, combining marks, line breaks, HTML entities,
percent-escapes, look-alike letters). `ordinary()` builds the other side: code, logs, commands
and prose with no secret in them, which must come out unchanged.

Every secret is made here from a seeded generator; none is real. `leaked(case, text)` is the
judge: whether any run of the secret can still be read in `text` once the disguises are read
through (entities and escapes decoded, compatibility forms folded, invisible characters and
line breaks dropped, look-alikes mapped back).
"""

from __future__ import annotations

import base64
import html
import random
import string
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.corpora import half

__all__ = ["Case", "cases", "leaked", "ordinary"]

B62 = string.digits + string.ascii_letters
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Case:
    family: str  # cli, cjk, xml, markdown, url, config, vendor, hex, base64, disguise
    text: str
    secret: str  # what must not be readable in the output (plain ASCII)

    @property
    def half(self) -> str:
        return half(self.text)


def _chars(rng: random.Random, n: int, alphabet: str = B62) -> str:
    body = "".join(rng.choice(alphabet) for _ in range(n))
    if alphabet is B62 and not (any(c.isdigit() for c in body) and any(c.isupper() for c in body)):
        body = rng.choice(string.digits) + rng.choice(string.ascii_uppercase) + body[2:]
    return body


_WORDS = (
    "maple harbor falcon quartz tundra velvet cobalt ember lotus nimbus orchid pepper "
    "saffron walnut zephyr bamboo canyon dragon"
).split()
_SYMBOLS = "!#%^*+-_.~"


def password(rng: random.Random, *, url_hostile: bool = False) -> str:
    """A password a person would choose, or a generated one."""
    style = rng.randrange(5)
    if style == 0:
        word = rng.choice(_WORDS).capitalize() + rng.choice(_SYMBOLS) + rng.choice(_WORDS)
        value = word + str(rng.randrange(10, 999))
    elif style == 1:
        value = _chars(rng, rng.randrange(10, 18), B62 + "!#%^*")
    elif style == 2:
        value = f"{rng.choice(_WORDS)}{rng.randrange(1970, 2030)}{rng.choice(_SYMBOLS)}"
        value = value.replace("a", "@").replace("o", "0").replace("e", "3")
    elif style == 3:
        value = rng.choice(["zhang", "wang", "li", "chen", "liu"]) + str(rng.randrange(100, 9999))
        value += rng.choice(_SYMBOLS) + rng.choice(_WORDS)[:4]
    else:
        value = _chars(rng, rng.randrange(8, 14), string.ascii_lowercase + string.digits)
    if url_hostile:
        at = rng.randrange(1, len(value) - 1)
        value = value[:at] + rng.choice("@#/%") + value[at:]
    return value


# -- the judge ---------------------------------------------------------------------------------

#: look-alikes the disguises below use, read back as the Latin letter they pass for
_LOOKALIKE_BACK = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "ѕ": "s", "і": "i", "х": "x", "у": "y",
    "к": "k", "т": "t", "н": "h", "в": "b", "м": "m", "ј": "j", "ԁ": "d", "ɡ": "g", "ո": "n",
    "ο": "o", "α": "a", "ρ": "p", "τ": "t", "ν": "v", "κ": "k", "ι": "i", "υ": "u", "ε": "e",
    "Α": "a", "Β": "b", "Ε": "e", "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o",
    "Ρ": "p", "Τ": "t", "Χ": "x", "Υ": "y", "Ζ": "z", "ⲟ": "o", "ⲣ": "p", "ⲥ": "c", "Ꭺ": "a",
    "Ꭼ": "e", "Ꮋ": "h", "Ꭲ": "t", "ꓑ": "p", "ꓢ": "s", "ꓮ": "a", "Ѕ": "s", "Р": "p", "С": "c",
    "А": "a", "Е": "e", "О": "o", "Т": "t", "Х": "x", "К": "k", "М": "m", "Н": "h", "В": "b",
}  # fmt: skip


def reading(text: str) -> str:
    """What a reader (or a model) takes from `text`: escapes decoded, compatibility forms and
    look-alikes folded, case dropped, invisible characters and all whitespace removed."""
    text = unicodedata.normalize("NFKC", text)  # full-width `％ｆａ` decodes as `%fa` does
    for _ in range(2):
        text = urllib.parse.unquote(html.unescape(text))
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.category(ch) in ("Cf", "Mn", "Me", "Zs", "Zl", "Zp", "Cc") or ch.isspace():
            continue
        out.append(_LOOKALIKE_BACK.get(ch, ch))
    return "".join(out).casefold()


def leaked(case: Case, text: str) -> bool:
    """Whether a run of the case's secret (10 characters, or all of a shorter one) can still
    be read in `text`."""
    secret, seen = reading(case.secret), reading(text)
    width = min(10, len(secret))
    return any(secret[i : i + width] in seen for i in range(len(secret) - width + 1))


# -- the families -------------------------------------------------------------------------------

_Maker = Callable[[random.Random], tuple[str, str]]

_CLI: list[Callable[[str, random.Random], str]] = [
    lambda p, r: (
        f'ldapsearch -x -H ldap://ldap.corp.internal -D "cn=admin,dc=corp" -w {p} -b "dc=corp" "(uid=jdoe)"'
    ),
    lambda p, r: (
        f"ldapmodify -H ldaps://dir.example.org -D cn=Manager,dc=example,dc=org -w '{p}' -f change.ldif"
    ),
    lambda p, r: f'ldapadd -x -D "cn=admin,dc=acme,dc=io" -w"{p}" -f users.ldif',
    lambda p, r: f"ldappasswd -x -D cn=admin,dc=acme -w {p} -s newpass uid=bob,ou=people,dc=acme",
    lambda p, r: f"zip -P {p} -r backup-{r.randrange(100)}.zip ./exports",
    lambda p, r: f"zip -r --password '{p}' db.zip dump.sql",
    lambda p, r: f"7z a -p{p} -mhe=on archive.7z ./secrets",
    lambda p, r: f'7z x -p"{p}" release.7z -o/tmp/out',
    lambda p, r: f"unrar x -p{p} parts.rar /srv/restore/",
    lambda p, r: f"unzip -P {p} invoices.zip -d invoices",
    lambda p, r: f"openssl enc -aes-256-cbc -salt -pass pass:{p} -in db.sql -out db.sql.enc",
    lambda p, r: (
        f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}"
    ),
    lambda p, r: f"openssl rsa -in server.key -passin 'pass:{p}' -out server.nopass.key",
    lambda p, r: (
        f"keytool -genkeypair -alias app -keystore app.jks -storepass {p} -keypass {p} -dname CN=app"
    ),
    lambda p, r: (
        f"keytool -importkeystore -srckeystore a.p12 -srcstorepass '{p}' -destkeystore b.jks -deststorepass changeit"
    ),
    lambda p, r: f"jarsigner -keystore release.jks -storepass {p} app.apk release",
    lambda p, r: f"mongo -u admin -p {p} --authenticationDatabase admin mongodb.internal/app",
    lambda p, r: f'mongosh "mongodb://db.internal:27017/app" --username app --password {p}',
    lambda p, r: f"mongodump --host rs0/db1:27017 -u backup -p '{p}' --out /backups/$(date +%F)",
    lambda p, r: (
        f"mongoimport --uri mongodb://db:27017/shop -u loader --password={p} --file items.json"
    ),
    lambda p, r: f'sqlcmd -S tcp:sql.corp.local,1433 -U sa -P {p} -Q "SELECT @@VERSION"',
    lambda p, r: f"bcp dbo.Orders out orders.dat -S sqlprod -U etl -P{p} -c",
    lambda p, r: f"smbclient //fileserver/finance -U 'CORP\\jdoe%{p}' -c 'ls'",
    lambda p, r: f"mount -t cifs //nas/share /mnt/share -o username=backup,password={p}",
    lambda p, r: f"htpasswd -b -c /etc/nginx/.htpasswd admin {p}",
    lambda p, r: f"rabbitmqctl add_user deploy '{p}'",
    lambda p, r: f"wget --user=ci --password={p} https://artifacts.example.com/build.tgz",
    lambda p, r: f"wget --http-user=bot --http-password '{p}' https://nexus.corp/repo/x.jar",
    lambda p, r: f"lftp -u uploader,{p} sftp://files.example.net",
    lambda p, r: f"influx -username admin -password {p} -execute 'SHOW DATABASES'",
    lambda p, r: f"cqlsh cassandra.internal -u cassandra -p {p}",
    lambda p, r: f"clickhouse-client --host ch1 --user default --password {p} --query 'select 1'",
    lambda p, r: f"redis-cli -h cache.internal --pass {p} INFO",
    lambda p, r: f"redis-cli -u redis://default:{p}@cache.internal:6379 PING",
    lambda p, r: f"gpg --batch --yes --passphrase '{p}' -d secrets.tar.gpg",
    lambda p, r: f"gpg --pinentry-mode loopback --passphrase={p} --sign release.tar.gz",
    lambda p, r: f"az login -u ops@corp.onmicrosoft.com -p {p}",
    lambda p, r: f"oc login https://api.ocp.corp:6443 -u developer -p {p}",
    lambda p, r: f"psql 'host=db.internal dbname=app user=app password={p} sslmode=require'",
    lambda p, r: f"pg_dump --dbname=postgresql://app:{p}@db.internal:5432/app -Fc > app.dump",
    lambda p, r: f"vsql -h vertica01 -U dbadmin -w {p}",
    lambda p, r: f"ncftpput -u web -p {p} ftp.example.com /htdocs index.html",
]


def _cli(rng: random.Random) -> Iterator[Case]:
    for make in _CLI:
        for _ in range(2):
            p = password(rng)
            lead = rng.choice(["", "$ ", "运行：", "ran `", "Try: ", "# restore\n"])
            text = lead + make(p, rng) + ("`" if lead == "ran `" else "")
            yield Case("cli", text, p)


_CJK: list[Callable[[str], str]] = [
    lambda p: f"数据库密码：{p}",
    lambda p: f"测试环境的管理员密码是 {p}，别外传",
    lambda p: f"VPN 口令: {p}",
    lambda p: f"服务器登录密碼：{p}（上周改過）",
    lambda p: f"堡垒机的口令是{p}",
    lambda p: f"新的 Wi-Fi 密码为 {p}",
    lambda p: f"生产库 root 密碼為 {p}",
    lambda p: f"| 环境 | 密码 |\n| --- | --- |\n| prod | {p} |",
    lambda p: f"邮箱密码={p}",
    lambda p: f"git 仓库的访问令牌是 {p}",
    lambda p: f"【备忘】redis 密码 {p}",
    lambda p: f"跳板机账号 ops，密码：{p}。",
    lambda p: f"对方发来的压缩包解压密码是：{p}",
    lambda p: f"用户名 admin 密码 {p}",
]


def _cjk(rng: random.Random) -> Iterator[Case]:
    for make in _CJK:
        for _ in range(2):
            p = password(rng)
            yield Case("cjk", make(p), p)


_XML_MD: list[Callable[[str], str]] = [
    lambda p: f"<password>{p}</password>",
    lambda p: (
        f"<servers>\n  <server>\n    <id>nexus</id>\n    <username>deploy</username>\n    <password>{p}</password>\n  </server>\n</servers>"
    ),
    lambda p: f'<property name="db.password" value="{p}"/>',
    lambda p: f'<entry key="smtp.password">{p}</entry>',
    lambda p: (
        f'<add name="Main" connectionString="Server=sql01;Database=Shop;User Id=shop;Password={p};" />'
    ),
    lambda p: f"<DbPassword>{p}</DbPassword>",
    lambda p: f'<credential user="svc" secret="{p}"/>',
    lambda p: f"| name | value |\n|---|---|\n| DB_PASSWORD | `{p}` |",
    lambda p: f"| 服务 | 用户 | 密码 |\n|---|---|---|\n| mysql | root | {p} |",
    lambda p: f"| user | password | env |\n| --- | --- | --- |\n| admin | {p} | staging |",
    lambda p: f"| key | secret |\n|:--|:--|\n| ci-bot | {p} |",
    lambda p: f"**Password:** {p}",
    lambda p: f"- password → `{p}`",
]


def _xml_md(rng: random.Random) -> Iterator[Case]:
    for make in _XML_MD:
        for _ in range(2):
            p = password(rng)
            yield Case("xml" if make(p).lstrip().startswith("<") else "markdown", make(p), p)


_URLS: list[Callable[[str], str]] = [
    lambda p: f"postgres://app:{p}@db.internal:5432/app",
    lambda p: f"DATABASE_URL=mysql://root:{p}@127.0.0.1:3306/shop",
    lambda p: f"mongodb+srv://admin:{p}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
    lambda p: f"amqp://guest:{p}@rabbit.internal:5672/%2F",
    lambda p: f"redis://:{p}@cache:6379/0",
    lambda p: f"git clone https://deploy:{p}@git.example.com/team/app.git",
    lambda p: f"ftp://uploader:{p}@ftp.example.net/incoming/",
    lambda p: f"proxy = http://jdoe:{p}@proxy.corp:3128",
]


def _urls(rng: random.Random) -> Iterator[Case]:
    for make in _URLS:
        for hostile in (True, True, False):
            p = password(rng, url_hostile=hostile)
            if hostile and rng.random() < 0.5:
                p = urllib.parse.quote(p, safe="")  # written escaped, as RFC 3986 asks
            yield Case("url", make(p), urllib.parse.unquote(p) if "%" in p else p)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _config(rng: random.Random) -> Iterator[Case]:
    for _ in range(2):
        tok = "npm_" + _chars(rng, 36)
        yield Case("config", f"//registry.npmjs.org/:_authToken={tok}", tok)
        uid = "-".join(_chars(rng, n, HEX) for n in (8, 4, 4, 4, 12))
        yield Case("config", f"//npm.corp.internal/repository/npm/:_authToken={uid}", uid)
        auth = _b64(f"deploy:{password(rng)}")
        yield Case("config", f"registry=https://npm.corp/\n_auth={auth}\nalways-auth=true", auth)
        pw = _b64(password(rng))
        yield Case("config", f"//npm.corp/:username=ci\n//npm.corp/:_password={pw}", pw)
        auth = _b64(f"robot$ci:{password(rng)}")
        yield Case(
            "config",
            '{\n  "auths": {\n    "registry.example.com": {\n      "auth": "'
            + auth
            + '"\n    }\n  }\n}',
            auth,
        )
        kube_tok = "eyJhbGciOiJSUzI1NiIsImtpZCI6I" + _chars(rng, 60) + "." + _chars(rng, 80)
        yield Case("config", f"users:\n- name: ci\n  user:\n    token: {kube_tok}", kube_tok)
        key_data = _b64("-----BEGIN RSA PRIVATE KEY-----\nMIIE" + _chars(rng, 60) + "\n")
        yield Case("config", f"    client-key-data: {key_data}", key_data)
        p = password(rng)
        yield Case(
            "config",
            f"Server=tcp:shop.database.windows.net,1433;Initial Catalog=shop;User ID=shop;Password={p};Encrypt=True;",
            p,
        )
        p = password(rng)
        yield Case("config", f"Driver={{ODBC Driver 18}};Server=sql01;UID=etl;PWD={p};", p)
        key = _b64(_chars(rng, 64))
        yield Case(
            "config",
            f"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}",
            key,
        )
        key = _b64(_chars(rng, 64))
        yield Case(
            "config",
            f"DefaultEndpointsProtocol=https;AccountName=shopfiles;AccountKey={key};EndpointSuffix=core.windows.net",
            key,
        )
        p = password(rng)
        yield Case(
            "config",
            f"[distutils]\nindex-servers = corp\n\n[corp]\nusername = ci\npassword = {p}",
            p,
        )
        p = password(rng)
        yield Case(
            "config", f"jdbc:sqlserver://sql01:1433;databaseName=hr;user=hr;password={p};", p
        )
        p = password(rng)
        yield Case("config", f"spring:\n  datasource:\n    username: app\n    password: '{p}'", p)
        p = password(rng)
        yield Case("config", f"BUNDLE_GEMS__CONTRIBSYS__COM=a1b2c3d4:{p}", p)
        key = _chars(rng, 40)
        yield Case("config", f"Ocp-Apim-Subscription-Key: {key}", key)
        key = _chars(rng, 32, HEX)
        yield Case("config", f"X-Honeycomb-Team: {key}", key)
        key = _chars(rng, 40)
        yield Case("config", f"PAGERDUTY_INTEGRATION_KEY={key}", key)
        key = _chars(rng, 36)
        yield Case("config", f"LOGDNA_INGESTION_KEY: {key}", key)


def _vendor_tokens(rng: random.Random) -> list[tuple[str, str]]:
    """Tokens of vendors the rule lists name and the redactor did not (family, token)."""
    uid = "-".join(_chars(rng, n, HEX) for n in (8, 4, 4, 4, 12))
    lower36 = string.ascii_lowercase + string.digits
    return [
        ("dockerhub", "dckr_pat_" + _chars(rng, 27)),
        ("nuget", "oy2" + _chars(rng, 43, lower36)),
        ("crates", "cio" + _chars(rng, 32)),
        ("sonarqube", "squ_" + _chars(rng, 40, HEX)),
        ("sonarqube", "sqp_" + _chars(rng, 40, HEX)),
        ("mailgun", "key-" + _chars(rng, 32, HEX)),
        ("mailchimp", _chars(rng, 32, HEX) + "-us" + str(rng.randrange(1, 21))),
        ("dropbox", "sl." + _chars(rng, 136)),
        ("mapbox", "sk.eyJ1Ijoi" + _chars(rng, 40) + "." + _chars(rng, 22)),
        (
            "discord",
            _b64(str(rng.randrange(10**17, 10**18))).rstrip("=")
            + "."
            + _chars(rng, 6)
            + "."
            + _chars(rng, 38),
        ),
        ("feishu-webhook", "https://open.feishu.cn/open-apis/bot/v2/hook/" + uid),
        (
            "teams-webhook",
            f"https://corp.webhook.office.com/webhookb2/{uid}@{uid}/IncomingWebhook/"
            + _chars(rng, 32, HEX)
            + "/"
            + uid,
        ),
        (
            "sentry-dsn",
            f"https://{_chars(rng, 32, HEX)}@o{rng.randrange(10**5, 10**6)}.ingest.sentry.io/{rng.randrange(10**6)}",
        ),
        ("razorpay", "rzp_live_" + _chars(rng, 14)),
        ("supabase", "sbp_" + _chars(rng, 40, HEX)),
        ("buildkite", "bkua_" + _chars(rng, 40, HEX)),
        ("circleci", "CCIPAT_" + _chars(rng, 22) + "_" + _chars(rng, 40, HEX)),
        ("netlify", "nfp_" + _chars(rng, 36)),
        ("render", "rnd_" + _chars(rng, 32)),
        ("figma", "figd_" + _chars(rng, 40)),
        ("clickup", f"pk_{rng.randrange(10**7, 10**8)}_" + _chars(rng, 32).upper()),
        ("octopus", "API-" + _chars(rng, 26, string.ascii_uppercase + string.digits)),
        ("yandex", "AQVN" + _chars(rng, 36)),
        ("plaid", "access-production-" + uid),
        ("vault", "hvs.CAESI" + _chars(rng, 60)),
        ("slack", "xoxe.xoxp-1-" + _chars(rng, 140)),
        ("splunk", "Authorization: Splunk " + uid),
        ("datadog", "DD-API-KEY: " + _chars(rng, 32, HEX)),
        ("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=" + _chars(rng, 64, HEX)),
        ("wecom", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + uid),
        ("posthog", "phx_" + _chars(rng, 43)),
        ("linear", "lin_oauth_" + _chars(rng, 64, HEX)),
        ("maxmind", _chars(rng, 6) + "_" + _chars(rng, 29) + "_mmk"),
    ]


_VENDOR_LEADS = [
    "export TOKEN_FOR_CI={}",
    "the key is {} (rotate after the demo)",
    "我把 {} 贴在这里了",
    "config: {}",
    "{}",
    "curl -H 'X-Key: {}' https://api.example.com",
]


def _vendor(rng: random.Random) -> Iterator[Case]:
    for _ in range(2):
        for family, token in _vendor_tokens(rng):
            lead = rng.choice(_VENDOR_LEADS)
            if family in ("splunk", "datadog") or family.endswith("webhook") or "://" in token:
                lead = rng.choice(["{}", "POST {} done", "webhook: {}"])
            secret = token.split(": ", 1)[-1]
            if "://" in secret:
                secret = secret.split("/hook/")[-1].split("access_token=")[-1].split("key=")[-1]
                secret = secret.split("webhookb2/")[-1].split("//")[-1].split("@")[0]
            yield Case("vendor", lead.format(token), secret)


def _hex(rng: random.Random) -> Iterator[Case]:
    leads = [
        "X-Auth-Token {}",
        "my api key {}",
        "the token: {}",
        "access key {} expires friday",
        "令牌 {} 已经失效",
        "secret {}",
        "--token {}",
        "api_key {}",
    ]
    for lead in leads:
        for n in (40, 64):
            value = _chars(rng, n, HEX)
            yield Case("hex", lead.format(value), value)


def _base64(rng: random.Random) -> Iterator[Case]:
    for _ in range(3):
        cred = _b64(f"admin:{password(rng)}")
        yield Case("base64", f"echo {cred} | base64 -d", cred)
        wrapped = _b64("ghp_" + _chars(rng, 36))
        yield Case("base64", f"GH_TOKEN_B64={wrapped}", wrapped)
        wrapped = _b64('{"username":"svc","password":"' + password(rng) + '"}')
        yield Case("base64", f"payload: {wrapped}", wrapped)
        wrapped = _b64("sk-proj-" + _chars(rng, 48))
        yield Case("base64", f"the env var holds {wrapped} (base64)", wrapped)
        cred = _b64(f"ci-bot:{password(rng)}")
        yield Case("base64", f"-H 'Proxy-Credentials: {cred}'", cred)


# -- disguises of the named families ------------------------------------------------------------

_FULLWIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "s": "ѕ", "i": "і", "x": "х"}
_GREEK = {"o": "ο", "a": "α", "p": "ρ", "t": "τ", "k": "κ", "i": "ι", "u": "υ", "v": "ν"}
_MATH_BOLD = {c: chr(0x1D41A + i) for i, c in enumerate(string.ascii_lowercase)} | {
    c: chr(0x1D400 + i) for i, c in enumerate(string.ascii_uppercase)
}


def _sprinkle(text: str, rng: random.Random, mark: str, every: int) -> str:
    out = []
    for i, ch in enumerate(text):
        out.append(ch)
        if i and i % every == 0 and ch.isalnum():
            out.append(mark)
    return "".join(out)


def _swap(text: str, table: dict[str, str], rng: random.Random, share: float = 0.6) -> str:
    return "".join(table[c] if c in table and rng.random() < share else c for c in text)


Disguise = Callable[[str, random.Random], str]
DISGUISES: dict[str, Disguise] = {
    "full-width": lambda t, r: "".join(_FULLWIDTH.get(c, c) for c in t),
    "nbsp": lambda t, r: _sprinkle(t, r, "\u00a0", r.randrange(6, 12)),
    "narrow-nbsp": lambda t, r: _sprinkle(t, r, "\u202f", r.randrange(6, 12)),
    "combining": lambda t, r: _sprinkle(
        t, r, r.choice("\u0301\u0308\u0327\u0336"), r.randrange(3, 7)
    ),
    "zero-width": lambda t, r: _sprinkle(t, r, r.choice("\u200b\u200c\u200d\u2060\ufeff"), 5),
    "soft-hyphen": lambda t, r: _sprinkle(t, r, "\u00ad", r.randrange(3, 6)),
    "newline": lambda t, r: t[: len(t) // 2] + "\n" + t[len(t) // 2 :],
    "crlf": lambda t, r: t[: len(t) // 3] + "\r\n" + t[len(t) // 3 :],
    "html-entities": lambda t, r: "".join(
        f"&#{ord(c)};" if c in "_=:-\"'" or r.random() < 0.15 else c for c in t
    ),
    "hex-entities": lambda t, r: "".join(f"&#x{ord(c):x};" if r.random() < 0.3 else c for c in t),
    "named-entities": lambda t, r: html.escape(t, quote=True).replace("=", "&equals;"),
    "percent": lambda t, r: "".join(
        f"%{ord(c):02X}" if c in "_=:-\"' " or r.random() < 0.2 else c for c in t
    ),
    "cyrillic": lambda t, r: _swap(t, _CYRILLIC, r),
    "greek": lambda t, r: _swap(t, _GREEK, r),
    "math-bold": lambda t, r: _swap(t, _MATH_BOLD, r, 0.5),
    "bidi": lambda t, r: _sprinkle(t, r, r.choice("\u202a\u202b\u202c\u202d\u202e\u2066\u2069"), 7),
    "tag-chars": lambda t, r: _sprinkle(t, r, "\U000e0041", 6),
    "variation": lambda t, r: _sprinkle(t, r, "\ufe0f", 5),
}


def _named_secrets(rng: random.Random) -> list[tuple[str, str]]:
    """(text, secret) of families the redactor names."""
    p = password(rng)
    return [
        ("ghp_" + _chars(rng, 36),) * 2,
        ("sk-proj-" + _chars(rng, 48),) * 2,
        ("AKIA" + _chars(rng, 16, string.ascii_uppercase + string.digits),) * 2,
        ("glpat-" + _chars(rng, 20),) * 2,
        (
            "xoxb-"
            + "-".join(str(rng.randrange(10**11, 10**12)) for _ in range(2))
            + "-"
            + _chars(rng, 24),
        )
        * 2,
        ("hf_" + _chars(rng, 34),) * 2,
        ("sk-ant-api03-" + _chars(rng, 60),) * 2,
        ("AIza" + _chars(rng, 35),) * 2,
        (f"PASSWORD={p}", p),
        (f'"api_key": "{(k := _chars(rng, 24))}"', k),
        (f"token: {(t := _chars(rng, 30))}", t),
        (f"Authorization: Bearer {(b := _chars(rng, 40))}", b),
        (f"postgres://app:{(u := password(rng))}@db:5432/x", u),
        (f"mysql -u root -p{(m := password(rng))} shop", m),
        (f"密码：{(c := password(rng))}", c),
    ]


def _disguised(rng: random.Random) -> Iterator[Case]:
    for name, disguise in DISGUISES.items():
        for text, secret in rng.sample(_named_secrets(rng), 5):
            around = rng.choice(["{}", "note: {} ok", "部署用 {} 。", "set {}\nthen restart"])
            yield Case(f"disguise:{name}", around.format(disguise(text, rng)), secret)


def cases() -> list[Case]:
    """Every secret case, in a fixed order (seeded)."""
    rng = random.Random(20260)
    out: list[Case] = []
    for family in (_cli, _cjk, _xml_md, _urls, _config, _vendor, _hex, _base64, _disguised):
        out.extend(family(rng))
    return out


# -- ordinary text ----------------------------------------------------------------------------

_ORDINARY_FIXED = [
    "zip -r release.zip dist/ && ls -lh release.zip",
    "7z x archive.7z -o/tmp/extract",
    "unzip -o build.zip -d build",
    "keytool -list -v -keystore app.jks",
    "keytool -genkeypair -alias app -keystore app.jks  # prompts for the store password",
    'ldapsearch -x -H ldap://ldap.corp.internal -b "dc=corp" "(uid=jdoe)" cn mail',
    "ldapsearch -Y EXTERNAL -H ldapi:/// -b cn=config",
    "mongosh --username app --password --authenticationDatabase admin  # prompts",
    "sqlcmd -S localhost -E -Q 'SELECT name FROM sys.databases'",
    "psql -h db.internal -U app -d app -c 'select count(*) from users'",
    "openssl req -new -newkey rsa:4096 -nodes -keyout server.key -out server.csr",
    "openssl s_client -connect example.com:443 -servername example.com",
    "gpg --list-secret-keys --keyid-format=long",
    "htpasswd -c /etc/nginx/.htpasswd admin  # asks twice",
    "wget -q https://github.com/cli/cli/releases/download/v2.40.0/gh_2.40.0_linux_amd64.tar.gz",
    "| name | type | default |\n|---|---|---|\n| timeout | int | 30 |",
    "| 字段 | 说明 |\n|---|---|\n| password_hash | bcrypt 之后的哈希 |",
    "| user | role |\n| --- | --- |\n| admin | owner |",
    '<password-policy min-length="12" require-digit="true"/>',
    "<passwordEncoder>bcrypt</passwordEncoder>",
    "<token-endpoint>https://auth.example.com/oauth/token</token-endpoint>",
    "密码是必填项，长度至少 12 位。",
    "请检查密码是否正确，然后重试。",
    "口令错误次数超过 5 次会锁定账号。",
    "令牌过期后需要重新登录。",
    "忘记密码时走邮箱重置流程。",
    "密码：请联系管理员获取",
    "https://www.npmjs.com/package/@types/node",
    "https://medium.com/@jdoe/how-we-cut-our-build-time-8f3a1c2d",
    "git@github.com:acme/shop.git",
    "ssh://git@gitlab.corp:2222/platform/infra.git",
    "scp build.tgz deploy@staging.internal:/srv/releases/",
    "rsync -avz ./site/ www@web01:/var/www/site/",
    "https://www.google.com/search?q=%E5%AF%86%E7%A0%81%E9%87%8D%E7%BD%AE",
    "https://example.com/docs/a%20guide%20to%20tokens.html",
    "&lt;div class=&quot;alert&quot;&gt;Saved&lt;/div&gt;",
    "if (a &amp;&amp; b) { return token.length; }",
    "echo aGVsbG8gd29ybGQ= | base64 -d   # hello world",
    "echo 'eyJhIjoxfQ==' | base64 -d  # {\"a\":1}",
    "Content-Type: application/json\nAccept: */*\nUser-Agent: curl/8.5.0",
    "Authorization: Bearer $GITHUB_TOKEN",
    "password = getpass.getpass('Password: ')",
    "SELECT id FROM users WHERE email = ? AND password_hash = ?",
    "const [header, payload, signature] = token.split('.');",
    "kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
    "docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/pg postgres:16",
    "npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
    "export NODE_AUTH_TOKEN=${{ secrets.NPM_TOKEN }}",
    "The rollout stalled at 43%; see run 9f8e7d6 for the logs.",
    "Le mot de passe doit contenir 12 caractères\u00a0: lettres et chiffres.",
    "café résumé naïve coöperate",
    "ｈｅｌｌｏ ｗｏｒｌｄ （全角） 测试",
    "第一行\n第二行\r\n第三行",
    "primary_key = ('tenant_id', 'id')\nsort_key = 'created_at'",
    "CACHE_KEY = f'user:{user_id}:profile'",
    "PRIMARY_KEY=id\nPARTITION_KEY=tenant",
    "the signing key rotates monthly; the fingerprint is in the wiki",
    "X-Request-Id: 7f3a9c0e-12b4-4d68-9e1f-0a2b3c4d5e6f",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "sha256sum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  file.txt",
    "commit 3f2a9c1b7e4d6a8f0c2e5b7d9a1c3e5f7b9d1a3c\nAuthor: Ana <ana@example.com>",
    "Merge pull request #412 from acme/feature/token-refresh",
    "Fixed: the token refresh loop no longer spins when the clock skews.",
    "We store only a salted hash of each password (argon2id, m=64MiB, t=3).",
    "docker pull ghcr.io/acme/api@sha256:4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b",
    "pip install --index-url https://pypi.org/simple requests==2.31.0",
    "curl -fsSL https://deb.nodesource.com/setup_20.x | bash -",
    "Human resources asked for the Q3 report.",
    "Assistant professors and the Human Factors group meet on Friday.",
    "mount -t nfs nas:/export/home /mnt/home -o rw,vers=4",
    "redis-cli -h cache.internal INFO memory",
    "clickhouse-client --host ch1 --query 'SELECT version()'",
    "mysql -u root -p shop < schema.sql",
    "az login --use-device-code",
    "oc login https://api.ocp.corp:6443 --web",
    "用户名 admin，登录后请立刻修改初始密码。",
    "API 密钥放在 Vault 的 kv/ci 路径下，不要写进仓库。",
    "数据库连接串在 .env.example 里有示例（值为空）。",
]

_IDENTS = (
    "user_id order_total parse_config load_tokens token_count max_tokens password_hash "
    "secret_name api_version key_path access_log session_store refresh_interval auth_flow"
).split()


def ordinary() -> list[str]:
    """Text of coding sessions with no secret in it: the fixed lines above and generated
    lines of code, logs, hashes, ids, paths and prose."""
    rng = random.Random(7)
    out = list(_ORDINARY_FIXED)
    for _ in range(60):
        ident = rng.choice(_IDENTS)
        out.append(
            rng.choice(
                [
                    f"def {ident}(self, value: str) -> None:",
                    f"    {ident} = self.settings.{ident}",
                    f"if not {ident}:\n    raise ValueError('missing {ident}')",
                    f"logger.info('{ident}=%s', {ident})",
                    f"{ident.upper()}_TIMEOUT = {rng.randrange(1, 600)}",
                    f"for {ident} in {ident}s: total += len({ident})",
                    f"src/app/{ident}/test_{ident}.py::test_{ident}_roundtrip PASSED",
                    f'  File "/app/{ident}.py", line {rng.randrange(1, 900)}, in {ident}',
                    f"{ident}: Optional[str] = None",
                    f"git log --oneline -- src/{ident}.py | head",
                    f"第 {rng.randrange(1, 99)} 行：{ident} 为空时直接返回。",
                ]
            )
        )
    for _ in range(30):
        kind = rng.randrange(6)
        if kind == 0:
            out.append(f"commit {_chars(rng, 40, HEX)}")
        elif kind == 1:
            uid = "-".join(_chars(rng, n, HEX) for n in (8, 4, 4, 4, 12))
            out.append(f"request {uid} finished in {rng.randrange(5, 900)} ms")
        elif kind == 2:
            out.append(f"image@sha256:{_chars(rng, 64, HEX)}")
        elif kind == 3:
            out.append(
                f"/home/dev/.cache/pip/wheels/{_chars(rng, 2, HEX)}/{_chars(rng, 2, HEX)}/"
                f"{_chars(rng, 56, HEX)}/numpy-1.26.4-cp311-linux_x86_64.whl"
            )
        elif kind == 4:
            out.append(
                f"2026-03-0{rng.randrange(1, 9)}T10:{rng.randrange(10, 59)}:00Z INFO worker={rng.randrange(1, 8)} queue=default jobs={rng.randrange(100)}"
            )
        else:
            out.append(
                f"v{rng.randrange(0, 9)}.{rng.randrange(0, 40)}.{rng.randrange(0, 9)} released; changelog at https://github.com/acme/app/releases"
            )
    return out
