"""The `huiyi` command line: parse, call the core, print. One module per command.

    root           the `huiyi` group: every command's module and `--help` line (`COMMANDS`)
    common         what the commands share: settings and the index, the error edge, options
    output         how search hits print, as text or JSON, without click
    quick_search   `huiyi search` in the forms people type, served without importing click
    index, search, recall, sessions, show, memory, mcp, hook, install, agents_md, config,
    doctor, forget, web, eval
                   one module per command, named after it (`agents-md` is `agents_md`)

Nothing is imported here: `huiyi.cli.quick_search` must not load click, which `root` does.
"""
