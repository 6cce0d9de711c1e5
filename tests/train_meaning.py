"""Train the meaning detector's classifier and write `huiyi/safety/meaning_weights.json`.

    python -m tests.train_meaning

The training set is the tuning half of the three memory-attack corpora
(`tests.corpora.threats`, `tests.corpora.fresh_threats` and `tests.corpora.more_threats`) plus
the hand-written prototypes of `huiyi.safety.meaning` (every intent's as attacks, the honest
bank as honest); the held halves play no part. The weights are keyed by the embedder's model
id, so a changed model gets the rules alone until this runs again. `tests/test_threat_halves.py`
retrains from the same set and checks the shipped file makes the same decisions.
"""

from __future__ import annotations

import json

from huiyi.safety.meaning import HONEST, L2, PROTOTYPES, WEIGHTS_FILE, train
from tests.corpora import split
from tests.corpora.fresh_threats import fresh_attacks, fresh_honest
from tests.corpora.more_threats import more_attacks, more_honest
from tests.corpora.threats import attacks, honest


def training_set() -> tuple[list[str], list[int]]:
    """Texts and labels (1 an attack) the classifier is trained on: tuning halves only."""
    texts: list[str] = []
    labels: list[int] = []
    for notes, label in (
        (attacks(), 1),
        (fresh_attacks(), 1),
        (more_attacks(), 1),
        (honest(), 0),
        (fresh_honest(), 0),
        (more_honest(), 0),
    ):
        for note in split(notes, lambda n: n.text)["tune"]:
            texts.append(note.text)
            labels.append(label)
    for bank in PROTOTYPES.values():
        texts.extend(bank)
        labels.extend([1] * len(bank))
    texts.extend(HONEST)
    labels.extend([0] * len(HONEST))
    return texts, labels


def main() -> None:
    from huiyi.search.embedding.e5ort import OnnxE5Embedder

    embedder = OnnxE5Embedder(workers=2)
    texts, labels = training_set()
    linear = train(embedder.embed_passages(texts), labels, L2)
    data = {"l2": L2, "trained_on": len(texts), "models": {embedder.model_id: linear.to_json()}}
    WEIGHTS_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{WEIGHTS_FILE.name}: {embedder.model_id}, {len(texts)} texts")


if __name__ == "__main__":
    main()
