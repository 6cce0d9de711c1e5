"""Entry points that connect huiyi to agent harnesses: the MCP server and how it finds its caller.

    context      which workspace and session an MCP tool call comes from (pure file reading)
    mcp_server   `huiyi mcp`: the recall tools (and memory tools) over stdio or Streamable HTTP

Nothing is imported here, so `import huiyi.integrations.context` stays cheap and the MCP SDK is
loaded only by the process that serves MCP.
"""
