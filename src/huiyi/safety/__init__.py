"""The safety exit: nothing reaches an agent or a person without passing through here.

`redact` masks secret shapes (`huiyi.safety.redact`, with its rule tables in `secret_shapes`,
`secret_names` and `exemptions`), `envelope` marks recalled history as data between
random-token markers and gives error messages the same exit, and the modules next to them hold
scope, privacy, budgets and the memory threat scan.

Nothing is re-exported here on purpose: `huiyi.safety.redact` is both a module and, inside
it, a function, and a package-level `redact` would shadow the module for `import ... as`.
Import from the modules: `from huiyi.safety.redact import redact`.
"""
