"""The `huiyi` command line: one module per command, imported only when it runs."""
