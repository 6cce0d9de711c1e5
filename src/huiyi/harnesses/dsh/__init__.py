"""DeepSeek Harness (DSH): `$DSH_HOME/sessions/**/session.jsonl(.zstd)`, hooks through its
Claude-Code bridge, MCP rows in `cordis.patch.yml` (docs/formats/dsh.md)."""

from huiyi.harnesses.base import Adapter

ADAPTER = Adapter(
    "dsh",
    "dsh",
    "DSH",
    __name__,
    profiles=True,
    memory_with_first_prompt=True,
    reads_digests=True,
)
