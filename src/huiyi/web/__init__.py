"""The local web page (`huiyi web`): memory panel, history search, sessions, index status.

    guard     who may talk to the page: loopback Host, the per-start key, Origin + CSRF, CSP
    markup    escaped HTML building (every value is text unless built as markup here)
    words     the interface in English and Chinese
    pages     the frame every view shares: head, navigation, language switch
    memory    the memory panel: both stores with budget bars, edit, archive, search
    history   search, sessions by workspace and the session reader
    status    sources, counts, bad lines, embedding coverage, index size, memory files
    app       the Starlette app, the one thread that talks to the index, and `serve`

Server-rendered HTML with a little plain JavaScript (`static/app.js`) and no build step; every
byte comes from this server. Like the CLI, it is an entry point for a person: it reads through
`Huiyi` (the doorway), shows every text through the safety exit (`safety.redact`), never shows
a private session, and renders nothing from the index as HTML.
"""
