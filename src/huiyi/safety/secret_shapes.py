"""The shapes secrets come in: vendor token prefixes and credentials on command lines.

A rule table, not an engine: each entry says what a secret of one family looks like, and
`huiyi.safety.redact` decides how to find and mask it. Adding a vendor is adding an entry here.
Every pattern must stay linear-time on Python's backtracking engine (see `redact`): a run that
can fail after a long stretch starts only where such a stretch starts (a look-behind on the
run's own characters) and consumes it possessively (`++`, `{n,}+`). Patterns are source text;
`redact` compiles each on its first use.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CLI_SHAPES", "GITLAB_PREFIXES", "PREFIXED", "VENDOR_SHAPES", "VendorShape"]


class VendorShape(NamedTuple):
    """One family of vendor tokens, masked as a whole match of `pattern`.

    `needles` are literals one of which every match holds (a pass whose needles are absent is
    skipped). With `body`, a match is a secret only when what follows its first `body`
    characters is no placeholder and holds more than three distinct characters, and, with
    `tokenish`, also looks like a token (`entropy.tokenish`); without, every match is one.
    """

    family: str
    pattern: str
    needles: tuple[str, ...]
    body: int | None = None
    tokenish: bool = False


# Look-behinds keep a prefix from matching inside a longer word; where the body's characters
# include the prefix's, the look-behind spans the body's class too, so a repeated prefix cannot
# make the engine rescan one run from every offset.
_A = "(?<![A-Za-z0-9])"
GITLAB_PREFIXES = (
    "glpat", "gldt", "glrt", "glrtr", "glptt", "glft", "glsoat", "glimt", "glagent", "glcbt",
    "glffct", "gloas", "glwt",
)  # fmt: skip
#: The vendor families with a pass of their own, most specific first (`sk-ant-` before `sk-`).
VENDOR_SHAPES: tuple[VendorShape, ...] = (
    VendorShape(
        "anthropic",
        _A + r"sk-ant-(?:[a-z]{2,8}\d{0,3}-)?[A-Za-z0-9_\-]{20,}+",
        ("sk-ant-",),
    ),
    VendorShape(
        "sk-key",
        r"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}+",
        ("sk-",),
        body=3,
        tokenish=True,
    ),
    VendorShape(
        "stripe",
        _A + r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}+|" + _A + r"whsec_[A-Za-z0-9]{20,}+",
        ("_live_", "_test_", "_prod_", "whsec_"),
        body=8,
    ),
    VendorShape(
        "github",
        _A + r"(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+)",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        body=4,
    ),
    VendorShape(
        "gitlab",
        _A
        + "(?:"
        + "|".join(GITLAB_PREFIXES)
        + r")-[A-Za-z0-9_\-.]{16,}+|"
        + _A
        + r"GR1348941[A-Za-z0-9_\-]{16,}+",
        (*(f"{prefix}-" for prefix in GITLAB_PREFIXES), "GR1348941"),
        body=6,
    ),
    VendorShape(
        "aws-key-id",
        _A + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        body=4,
    ),
    VendorShape(
        "slack",
        _A + r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}+"
        r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,}+",
        ("xox", "xapp-", "hooks.slack.com/"),
        body=5,
    ),
    VendorShape(
        "google",
        _A + r"(?:AIza[A-Za-z0-9_\-]{30,}+|GOCSPX-[A-Za-z0-9_\-]{20,}+|ya29\.[A-Za-z0-9_\-]{20,}+)",
        ("AIza", "GOCSPX-", "ya29."),
        body=4,
    ),
    VendorShape("huggingface", _A + r"hf_[A-Za-z0-9]{30,}+", ("hf_",), body=3),
    VendorShape("npm", _A + r"npm_[A-Za-z0-9]{30,}+", ("npm_",), body=4),
    VendorShape(
        "pypi",
        r"(?<![A-Za-z0-9_\-])pypi-[A-Za-z0-9_\-]{40,}+",
        ("pypi-",),
        body=5,
    ),
    VendorShape(
        "sendgrid",
        r"(?<![A-Za-z0-9_\-.])SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+",
        ("SG.",),
        body=3,
    ),
    VendorShape("groq", _A + r"gsk_[A-Za-z0-9]{20,}+", ("gsk_",), body=4),
    VendorShape("xai", _A + r"xai-[A-Za-z0-9]{20,}+", ("xai-",), body=4),
    VendorShape("telegram", _A + r"\d{6,12}+:AA[A-Za-z0-9_\-]{30,}+", (":AA",)),
    VendorShape(
        "jwt",
        r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*+",
        ("eyJ",),
    ),
)


#: More vendor prefixes, from the public rule lists of gitleaks (config/gitleaks.toml) and the
#: Hermes agent (agent/redact.py): (family, pattern, needles). Each pattern starts at its
#: prefix and has no capturing group; one pass runs the families whose needles occur.
PREFIXED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("digitalocean", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    (
        "square",
        r"sq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,60}+|EAAA[A-Za-z0-9_\-]{56,80}+",
        ("sq0", "EAAA"),
    ),
    ("perplexity", r"pplx-[A-Za-z0-9]{40,}+", ("pplx-",)),
    ("replicate", r"r8_[A-Za-z0-9]{30,}+", ("r8_",)),
    ("tavily", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,}+", ("tvly-",)),
    ("firecrawl", r"fc-[a-f0-9]{32}", ("fc-",)),
    ("browserbase", r"bb_live_[A-Za-z0-9_\-]{20,}+", ("bb_live_",)),
    ("notion", r"ntn_[A-Za-z0-9]{40,}+|secret_[A-Za-z0-9]{43}", ("ntn_", "secret_")),
    ("matrix", r"syt_[A-Za-z0-9_]{20,}+", ("syt_",)),
    ("fireworks", r"(?:fw|fpk)_[A-Za-z0-9]{20,}+", ("fw_", "fpk_")),
    ("elevenlabs", r"sk_[a-f0-9]{48}", ("sk_",)),
    ("zhipu", r"[0-9a-f]{32}\.[A-Za-z0-9]{16,}+", (".",)),
    (
        "1password",
        r"ops_eyJ[A-Za-z0-9+/]{100,}+={0,3}+"
        r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}",
        ("ops_eyJ", "A3-"),
    ),
    ("age", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET-KEY-1",)),
    ("airtable", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", ("pat",)),
    ("alibaba", r"LTAI[A-Za-z0-9]{20}", ("LTAI",)),
    ("artifactory", r"AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}", ("AKCp", "cmVmd")),
    ("atlassian", r"ATATT3[A-Za-z0-9_\-=]{150,}+", ("ATATT3",)),
    ("aws-bedrock", r"ABSK[A-Za-z0-9+/]{109,269}+={0,2}+", ("ABSK",)),
    ("azure", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}+", ("Q~",)),
    ("clojars", r"CLOJARS_[A-Za-z0-9]{60}", ("CLOJARS_",)),
    ("databricks", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    ("doppler", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+", ("dp.",)),
    ("duffel", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", ("duffel_",)),
    ("dynatrace", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    ("easypost", r"EZ[AT]K[A-Za-z0-9]{54}", ("EZAK", "EZTK")),
    ("facebook", r"EAA[MC][A-Za-z0-9]{100,}+", ("EAAM", "EAAC")),
    ("flutterwave", r"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}+(?:-X)?", ("FLWSECK",)),
    ("flyio", r"fo1_[\w\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}+={0,3}+", ("fo1_", "fm1", "fm2")),
    ("frameio", r"fio-u-[A-Za-z0-9\-_=]{64}", ("fio-u-",)),
    (
        "grafana",
        r"glc_[A-Za-z0-9+/]{32,}+={0,3}+|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|eyJrIjoi[A-Za-z0-9]{70,}+",
        ("glc_", "glsa_", "eyJrIjoi"),
    ),
    ("hashicorp", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70}+", (".atlasv1.",)),
    ("vault", r"hv[sb]\.[\w\-]{90,}+", ("hvs.", "hvb.")),
    ("heroku", r"HRKU-AA[0-9a-zA-Z_\-]{58}", ("HRKU-AA",)),
    ("huggingface", r"api_org_[A-Za-z]{34}", ("api_org_",)),
    ("infracost", r"ico-[A-Za-z0-9]{32}", ("ico-",)),
    ("linear", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}+", ("lin_api_", "lin_oauth_")),
    (
        "newrelic",
        r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}",
        ("NRAK-", "NRJS-", "NRII-"),
    ),
    ("openshift", r"sha256~[\w\-]{43}", ("sha256~",)),
    ("planetscale", r"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}+", ("pscale_",)),
    ("postman", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ("PMAK-",)),
    ("prefect", r"pnu_[A-Za-z0-9]{36}", ("pnu_",)),
    ("pulumi", r"pul-[a-f0-9]{40}", ("pul-",)),
    ("readme", r"rdme_[a-z0-9]{70}", ("rdme_",)),
    ("rubygems", r"rubygems_[a-f0-9]{48}", ("rubygems_",)),
    ("scalingo", r"tk-us-[\w\-]{48}", ("tk-us-",)),
    ("brevo", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}", ("keysib-", "smtpsib-")),
    ("sentry", r"sntrys_eyJ[A-Za-z0-9+/=_]{50,}+|sntryu_[a-f0-9]{64}", ("sntrys_", "sntryu_")),
    ("shippo", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_",)),
    ("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),
    ("twilio", r"SK[0-9a-fA-F]{32}", ("SK",)),
    ("typeform", r"tfp_[A-Za-z0-9_\-.=]{59,}+", ("tfp_",)),
    ("sourcegraph", r"sgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}", ("sgp_",)),
    ("cloudflare", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
    # code quality, CI, package and payment services (gitleaks' rules)
    ("sonarqube", r"sq[pua]_[a-f0-9]{40}", ("squ_", "sqp_", "sqa_")),
    ("buildkite", r"bkua_[a-f0-9]{40}", ("bkua_",)),
    ("supabase", r"sbp_[a-f0-9]{40}", ("sbp_",)),
    ("razorpay", r"rzp_(?:live|test)_[A-Za-z0-9]{14}", ("rzp_",)),
    ("clickup", r"pk_[0-9]{7,9}_[A-Z0-9]{32}", ("pk_",)),
    ("octopus", r"API-[A-Z0-9]{26}", ("API-",)),
    ("mapbox", r"[ps]k\.eyJ1Ijoi[\w\-]{20,}+\.[\w\-]{20,}+", ("k.eyJ1Ijoi",)),
    (
        "plaid",
        r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{4}-[0-9a-f]{12}",
        ("access-",),
    ),
    # chat-bot tokens and webhooks: Discord bots, Feishu/Lark and Teams incoming webhooks
    ("discord", r"[MNO][A-Za-z0-9]{23,27}\.[\w\-]{6}\.[\w\-]{27,40}", (".",)),
    (
        "feishu-webhook",
        r"https://open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[\w\-]{16,64}+",
        ("/open-apis/bot/",),
    ),
    (
        "teams-webhook",
        r"https://[\w\-]{1,63}\.webhook\.office\.com/webhookb2/[\w\-@]{16,120}+"
        r"/IncomingWebhook/[\w\-]{16,64}+/[\w\-]{16,64}+",
        ("webhook.office.com",),
    ),
)  # fmt: skip


# Credentials on command lines and in credential files, where no `=` or `:` separates the
# secret from its name: `docker login -p …`, `sshpass -p …`, `mysql -p…`, `curl -u user:…`,
# `--password …`, netrc `password …` lines, `<add key="…Password" value="…"/>`. Each pattern
# names the secret `value` (a netrc line's, `line`) and, for `cli-flag` and `xml`, the `word`
# that names the secret: (family, pattern, needles).
_CLI_VALUE = r"(?P<value>\"[^\"\n]{1,512}+\"|'[^'\n]{1,512}+'|[^\s'\"\-<>|&;][^\s'\"]{0,511}+)"
#: a value glued to its flag (`-pSECRET`, `-p"SECRET"`)
_GLUED_VALUE = r"(?P<value>\"[^\"\n]{1,512}+\"|'[^'\n]{1,512}+'|[^\s'\"\-<>|&;][^\s'\"]{0,511}+)"
#: the rest of a command line, up to a pipe, a `;`, an `&` or the end of the line
_ARGS = r"[^\n|;&]{0,200}?"

#: Tools whose short flag takes a password, by family of tool, and how the value follows
#: (` ` spaced, `` glued, or either): the flag means something else in other tools (`-p` is a
#: port to ssh and psql, `-w` a word to grep), so it counts only after one of these names.
PASSWORD_FLAGS: tuple[tuple[str, str, str], ...] = (
    # LDAP clients: -w secret, -wsecret
    ("ldapsearch|ldapmodify|ldapadd|ldapdelete|ldappasswd|ldapwhoami|ldapcompare|ldapmodrdn"
     "|ldapexop|ldapurl", "-w", "either"),
    # archivers: zip -P secret, 7z -psecret, unrar -psecret
    ("zip|unzip|zipcloak|zipsplit", "-P", "spaced"),
    ("7z|7za|7zr|7zz|rar|unrar", "-p", "glued"),
    # database clients and shells
    ("mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|mongotop"
     "|mongofiles|cqlsh|ncftp|ncftpput|ncftpget|ncftpls", "-p", "spaced"),
    ("sqlcmd|bcp|osql|isql|tsql", "-P", "either"),
    ("vsql", "-w", "either"),
    # cloud and cluster logins: oc login -p secret
    ("oc|az|cf|argocd|ibmcloud|crc", "-p", "spaced"),
    # encryption: openssl enc -k secret
    ("openssl", "-k", "spaced"),
)  # fmt: skip


def _password_flag(tools: str, flag: str, follows: str) -> str:
    gap = {"spaced": r"[ \t]++", "glued": "", "either": r"[ \t]*+"}[follows]
    value = _GLUED_VALUE if follows == "glued" else _CLI_VALUE
    return rf"(?<![\w.\-/])(?:{tools})(?:\.exe)?[ \t]{_ARGS}(?<=[ \t]){flag}{gap}{value}"


_FLAG_WORDS = (
    "password|passwd|passphrase|pass|storepass|keypass|srcstorepass|deststorepass|srckeypass"
    "|destkeypass|passin|passout|token|secret|api-key|apikey|access-key|secret-key|client-secret"
)
CLI_SHAPES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # Bundler's per-host credentials: `BUNDLE_GEMS__EXAMPLE__COM=user:password`
    (
        "password",
        r"\bBUNDLE_[A-Z0-9_]{2,100}+=[\"']?[^:\s\"']{1,128}+:(?P<value>[^\s\"']{1,512}+)",
        ("BUNDLE_",),
    ),
    (
        "password",
        r"\b(?:docker|podman|nerdctl|helm|skopeo|buildah|oras|crane|regctl|oc|az|cf|argocd"
        r"|ibmcloud)\b[^\n|;&]{0,160}?"
        r"\blogin\b[^\n|;&]{0,200}?[ \t](?:-p|--password)(?:[ \t]++|=)" + _CLI_VALUE,
        ("login",),
    ),
    ("password", r"\bsshpass[ \t]++-p[ \t]*+" + _CLI_VALUE, ("sshpass",)),
    (
        "password",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?"
        r"[ \t]-p(?P<value>[^\s'\"\-][^\s'\"]{0,511}+)",
        ("mysql", "mariadb"),
    ),
    (
        "password",
        r"\bredis-cli\b[^\n|;&]{0,200}?[ \t]-a[ \t]++" + _CLI_VALUE,
        ("redis-cli",),
    ),
    (
        "password",
        r"\b(?:curl|http|https|xh)\b[^\n|;&]{0,200}?[ \t](?:-u[ \t]*+|--user(?:[ \t]++|=)|"
        r"-a[ \t]++|--auth(?:[ \t]++|=))[\"']?[^\s:\"'@]{0,128}+:(?P<value>[^\s\"'@]{1,512}+)",
        ("curl", "http", "xh"),
    ),
    *(
        ("password", _password_flag(tools, flag, follows), tuple(tools.split("|")))
        for tools, flag, follows in PASSWORD_FLAGS
    ),
    # smbclient -U 'DOMAIN\user%secret', lftp -u user,secret
    (
        "password",
        r"\b(?:smbclient|rpcclient|smbmap|smbcacls|smbget|winexe|nxc|crackmapexec)\b"
        r"[^\n|;&]{0,200}?[ \t](?:-U|--user(?:name)?)(?:[ \t]++|=)[\"']?[^\s%\"']{1,128}+%"
        r"(?P<value>[^\s\"']{1,512}+)",
        ("smb", "rpcclient", "winexe", "nxc", "crackmapexec"),
    ),
    (
        "password",
        r"\blftp\b[^\n|;&]{0,200}?[ \t]-u[ \t]++[\"']?[^\s,\"']{1,128}+,"
        r"(?P<value>[^\s\"']{1,512}+)",
        ("lftp",),
    ),
    # passwords as positional arguments: htpasswd -b FILE USER PASSWORD,
    # rabbitmqctl add_user USER PASSWORD
    (
        "password",
        r"\bhtpasswd[ \t]++(?:-[A-Za-z]{1,8}+[ \t]++){0,3}-[A-Za-z]{0,6}?b[A-Za-z]{0,6}+[ \t]++"
        r"(?:-[A-Za-z]{1,8}+[ \t]++){0,3}[^\s\-]\S{0,255}+[ \t]++\S{1,128}+[ \t]++" + _CLI_VALUE,
        ("htpasswd",),
    ),
    (
        "password",
        r"\brabbitmqctl[ \t]++(?:add_user|change_password)[ \t]++\S{1,128}+[ \t]++" + _CLI_VALUE,
        ("rabbitmqctl",),
    ),
    # Bundler's per-host credentials: BUNDLE_GEMS__EXAMPLE__COM=user:secret
    (
        "password",
        r"\bBUNDLE_[A-Z0-9_]{1,100}+__[A-Z0-9_]{1,100}+[ \t]*+[=:][ \t]*+[\"']?[^\s:\"']{1,128}+:"
        r"(?P<value>[^\s\"']{1,512}+)",
        ("BUNDLE_",),
    ),
    (
        "cli-flag",
        rf"(?<![\w-])--?(?:[a-z0-9]{{1,20}}-){{0,3}}(?P<word>{_FLAG_WORDS})[ \t]++" + _CLI_VALUE,
        ("-",),
    ),
    (
        "password",
        r"\bmachine[ \t]++\S{1,253}+(?:[ \t]++(?:login|account)[ \t]++\S{1,253}+){0,2}"
        r"[ \t]++password[ \t]++(?P<value>\S{1,512}+)"
        r"|(?m:^[ \t]*+password[ \t]++(?P<line>\S{1,512}+)[ \t]*+$)",
        ("machine",),
    ),
    (
        "xml",
        r"\b(?:[Kk]ey|[Nn]ame)[ \t]*+=[ \t]*+\"(?P<word>[^\"\n]{0,64}?)\"[ \t]++"
        r"[Vv]alue[ \t]*+=[ \t]*+\"(?P<value>[^\"\n]{1,512}+)\"",
        ("alue",),
    ),
)  # fmt: skip
