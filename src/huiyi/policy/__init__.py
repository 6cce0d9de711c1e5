"""Agent policy: what a tool call, a hook or a person's search does, above the one doorway
(`huiyi.api.Huiyi`) and below the transports.

    protocol    the requests (tool call, hook, search, recall), the reply, the one error encoding
    handler     `RequestHandler`: every request kind served for one `Huiyi`
    tools       the six MCP tools: arguments, caller, refresh, consent, the call, idle work
    arguments   a tool call's arguments checked against the published schema
    manifest    what huiyi publishes over MCP (`manifest.json`, generated from the SDK server)
    caller      which workspace and session a tool call comes from (asks each harness)
    consent     ask-before-recall: one user answer per reply
    hooks       the four hook events: memory block, automatic recall, anchors, indexing

Nothing is imported here: the light servers import `protocol` without the core.
"""
