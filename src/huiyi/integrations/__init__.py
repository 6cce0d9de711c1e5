"""Entry points that connect huiyi to agent harnesses: the MCP server and how it finds its caller.

    context      which workspace and session an MCP tool call comes from (pure file reading)
    calls        one `tools/call` served without the MCP SDK, the same for every server below
    published    what huiyi publishes over MCP (tools, instructions), read from published.json
    front        `huiyi mcp` over stdio: standard library only, answers at once, forwards calls
    service      the warm per-home service the fronts hand their calls to (a Unix socket)
    mcp_server   the official SDK server: `huiyi mcp --http`, and the source of published.json
    http_auth    what `huiyi mcp --http` asks of a client: its bearer token, and the workspaces
                 that token may read

Nothing is imported here, so `import huiyi.integrations.front` stays cheap and the MCP SDK is
loaded only by the process that serves MCP over HTTP.
"""
