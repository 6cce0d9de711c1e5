"""Transports: how a request reaches the core, and how its reply goes back.

    route          the one route every front takes: the warm service if it runs, else here
    stdio_mcp      `huiyi mcp` over stdio: JSON-RPC itself, standard library only
    hook_command   `huiyi hook HARNESS EVENT`: stdin in, the harness's hook form out
    cli_client     a person's `huiyi search` and `huiyi recall`
    service        the warm per-home service process (`python -m huiyi.transports.service`)
    service_client how a front finds, starts and asks that service
    wire           the service's framing: newline JSON on an owner-only Unix socket
    http_mcp       `huiyi mcp --http`: the official SDK's Streamable HTTP server
    http_auth      its bearer token and the workspaces that token may read

What a request is, and what serves it, is the policy layer's (`huiyi.policy.protocol`,
`huiyi.policy.handler`). Nothing is imported here, so `import huiyi.transports.stdio_mcp` stays
cheap and the MCP SDK loads only in the process that serves MCP over HTTP.
"""
