"""Negatives for the public dev sets: questions asked in a workspace that cannot answer them.

LoCoMo and MemDaily label only questions their own history answers, so by themselves they
cannot show whether a search knows when to say "nothing found". Their questions can, asked
where they do not belong: a LoCoMo question naming Caroline, asked in the conversation of Jon
and Gina (who never mention her), or a MemDaily question about a user's boss asked in a file
of planned events. Such a question is a near miss, not noise: the same kind of chat, the same
templates, often the same words (`support group`, `上司`), only not this history's.

`foreign_negatives` picks them deterministically (every k-th admissible question of the other
workspaces, in set order), so a report is comparable run to run; the loaders decide what is
admissible (`datasets.load_locomo`, `datasets.load_memdaily`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from huiyi.eval.evalset import EvalQuery

__all__ = ["NEGATIVE", "PER_WORKSPACE", "foreign_negatives"]

#: negatives asked in each workspace of a dev set
PER_WORKSPACE = 12
#: their category in reports
NEGATIVE = "negative"


def foreign_negatives(
    queries: Sequence[EvalQuery],
    workspaces: Sequence[str],
    admissible: Callable[[EvalQuery, str], bool],
    *,
    per_workspace: int = PER_WORKSPACE,
) -> list[EvalQuery]:
    """For each workspace, up to `per_workspace` questions of other workspaces that
    `admissible(question, workspace)` accepts, spread evenly over them, as negatives."""
    out: list[EvalQuery] = []
    for workspace in workspaces:
        pool = [q for q in queries if q.workspace != workspace and admissible(q, workspace)]
        if not pool or per_workspace < 1:
            continue
        step = max(1, len(pool) // per_workspace)
        for q in pool[::step][:per_workspace]:
            out.append(
                EvalQuery(
                    id=f"{q.id}@{workspace.rsplit('/', 1)[-1]}",
                    query=q.query,
                    relevant=(),
                    workspace=workspace,
                    category=NEGATIVE,
                )
            )
    return out
