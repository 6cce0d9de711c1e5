"""`python -m huiyi` runs the CLI."""

from huiyi.cli import main

main()
