"""`huiyi eval` without the command line: a labelled set, a temporary index, every layer scored.

`evaluate_set` does what the command promises, so the CLI stays a thin shell and tests call it
directly:

1. the set is written out as generic JSONL files (`to_generic_jsonl`) and indexed into a fresh
   HUIYI_HOME through `Huiyi.index(jsonl=...)`, the same path a user's import takes;
2. the index is checked against the set: every workspace a query names must resolve
   (`Huiyi.resolve_workspace`) to exactly the sessions whose `cwd` it is, with all their
   events, or the numbers would score a scope bug instead of a ranking (`EvalError`);
3. when a semantic or hybrid layer is asked for, the missing vectors are computed with the
   configured embedder (`Huiyi.embed`), reporting progress; an embedder that fails is noted,
   and the layers that need it then fail query by query instead of stopping the run;
4. every query is asked through `Huiyi.search` once per layer, scoped to its workspace
   (`layers=("lexical",)` and so on; `hybrid` is the fused default, `layers=None`), next to the
   plain BM25 baseline (`Bm25Baseline`) in the same run;
5. the result is a `Report` (text table or `--json` shape) with the setup facts in `info`.

A single-layer search whose layer did not run (it failed, or it is not available) raises
`LayerUnavailable`, which the runner counts as a failure with an empty ranking. A hybrid search
records which layers took part in each query, so a coverage gate or a dropped layer shows up in
the report as `ran lexical+fuzzy: 12` rather than as an unexplained dip.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from huiyi.config import Settings
from huiyi.errors import EvalError, HuiyiError, LayerUnavailable, UsageError
from huiyi.eval.datasets import to_generic_jsonl
from huiyi.eval.evalset import EvalQuery, EvalSet, event_id
from huiyi.eval.runner import DEPTH, LayerRun, Report, run

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.search.embedding.base import Embedder

__all__ = [
    "BASELINE",
    "LAYERS",
    "EvalError",
    "LayerSearch",
    "LayerUnavailable",
    "evaluate_set",
    "limit_queries",
    "parse_layers",
]

#: Our layers in report order; `hybrid` is the fused ranking every user-facing search returns.
LAYERS = ("lexical", "fuzzy", "semantic", "hybrid")
#: The name of the baseline column.
BASELINE = "bm25"
#: Layers that need vectors before they can be scored.
NEEDS_VECTORS = frozenset({"semantic", "hybrid"})

Progress = Callable[[str], None]


def parse_layers(choice: str) -> tuple[str, ...]:
    """`all` or one layer name, as `--layer` takes it."""
    if choice == "all":
        return LAYERS
    if choice not in LAYERS:
        raise UsageError(f"unknown layer {choice!r}; use one of: {', '.join(LAYERS)}, all")
    return (choice,)


def limit_queries(evalset: EvalSet, count: int) -> EvalSet:
    """The first `count` queries, with only the sessions they can search.

    When every kept query names a workspace, sessions of other workspaces are left out of the
    index too: their events could never be returned, and embedding them would only cost time.
    """
    if count < 1:
        raise UsageError("--limit-queries must be at least 1")
    queries = evalset.queries[:count]
    workspaces = {q.workspace for q in queries}
    sessions = evalset.sessions
    if None not in workspaces:
        sessions = [s for s in sessions if s.cwd in workspaces]
    return replace(evalset, sessions=sessions, queries=queries)


class LayerSearch:
    """A `SearchFn` over `Huiyi.search` for one layer (`hybrid`: the fused default)."""

    def __init__(
        self, hy: Huiyi, layer: str, *, depth: int = DEPTH, unavailable: str | None = None
    ) -> None:
        if layer not in LAYERS:
            raise UsageError(f"unknown layer {layer!r}; use one of: {', '.join(LAYERS)}")
        self.hy = hy
        self.layer = layer
        self.depth = depth
        #: when set, every query fails with this reason (a semantic layer with no vectors)
        self.unavailable = unavailable
        #: how often each combination of layers answered (hybrid: which layers were fused)
        self.ran: Counter[str] = Counter()

    def __call__(self, query: EvalQuery) -> Sequence[str]:
        if self.unavailable is not None:
            raise LayerUnavailable(f"{self.layer} did not run: {self.unavailable}")
        layers = None if self.layer == "hybrid" else (self.layer,)
        result = self.hy.search(
            query.query,
            workspace=query.workspace,
            all_workspaces=query.workspace is None,
            limit=self.depth,
            layers=layers,
        )
        self.ran["+".join(result.layers) or "none"] += 1
        if layers is not None and self.layer not in result.layers:
            reason = "; ".join(result.notes) or "no reason given"
            raise LayerUnavailable(f"{self.layer} did not run: {reason}")
        return [event_id(hit.session_id, hit.seq) for hit in result.hits]


@contextmanager
def index_home_dir(index_home: Path | None) -> Iterator[Path]:
    """`index_home`, created if need be, else a temporary directory removed afterwards."""
    if index_home is not None:
        index_home.mkdir(parents=True, exist_ok=True)
        yield index_home
        return
    with tempfile.TemporaryDirectory(prefix="huiyi-eval-") as tmp:
        yield Path(tmp)


@contextmanager
def indexed(
    evalset: EvalSet,
    settings: Settings,
    *,
    index_home: Path | None,
    embedder: Embedder | str | None,
    progress: Progress | None,
) -> Iterator[Huiyi]:
    """A `Huiyi` over `evalset` alone: written out as generic JSONL and indexed through the
    path a user's import takes, in `index_home` or a temporary home removed afterwards."""
    from huiyi.api import Huiyi

    with index_home_dir(index_home) as home:
        export = home / "export"
        to_generic_jsonl(evalset, export)
        hy = Huiyi(settings=settings._replace(home=home / "huiyi"), embedder=embedder)
        try:
            if progress is not None:
                progress(f"indexing {sum(len(s.events) for s in evalset.sessions)} events")
            report = hy.index(jsonl=[export])
            errors = [e for r in report.sources.values() for e in r.errors]
            if errors:
                raise EvalError(f"indexing the exported set failed: {errors[0]}")
            yield hy
        finally:
            hy.close()


def _require_baseline_packages() -> None:
    """The baseline needs the `eval` extra; say so instead of failing halfway with a traceback."""
    try:
        import bm25s  # type: ignore[import-untyped]  # noqa: F401
        import jieba  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"the BM25 baseline needs {exc.name or 'bm25s and jieba'}: pip install 'huiyi[eval]'"
        ) from exc


def _check_index(hy: Huiyi, evalset: EvalSet) -> int:
    """Compare the index with the set workspace by workspace; return events not indexed.

    Each session's `cwd` must resolve to a workspace of its own, holding exactly the sessions
    with that cwd: otherwise a query scoped to it would search other sessions too, or none.
    """
    owners: dict[str, str] = {}
    for cwd in evalset.workspaces():
        resolved = hy.resolve_workspace(cwd)
        other = owners.setdefault(resolved, cwd)
        if other != cwd:
            raise EvalError(
                f"the cwds {other!r} and {cwd!r} both resolve to workspace {resolved!r} (a git "
                "repository above them?), so their queries would search each other's sessions"
            )
    missing_events = 0
    for cwd in evalset.workspaces():
        expected = {s.id: len(s.events) for s in evalset.sessions if s.cwd == cwd}
        indexed = {s.id: s.event_count for s in hy.sessions(workspace=cwd)}
        if indexed.keys() != expected.keys():
            lost = sorted(expected.keys() - indexed.keys())
            extra = sorted(indexed.keys() - expected.keys())
            raise EvalError(
                f"workspace {cwd!r} (resolved: {hy.resolve_workspace(cwd)!r}) holds "
                f"{len(indexed)} sessions in the index instead of the set's {len(expected)}"
                + (f"; missing {lost[:3]}" if lost else "")
                + (f"; unexpected {extra[:3]}" if extra else "")
                + " (a relative cwd, or an index home reused for another set?)"
            )
        missing_events += sum(max(0, n - indexed[sid]) for sid, n in expected.items())
    return missing_events


def _embed(hy: Huiyi, info: dict[str, object], progress: Progress | None) -> None:
    started = time.perf_counter()
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if progress is None or (done < total and now - last[0] < 2.0):
            return
        last[0] = now
        rate = done / max(now - started, 1e-9)
        progress(f"embedding {done}/{total} texts ({rate:.1f}/s)")

    try:
        embedded = hy.embed(progress=report)
    except HuiyiError as exc:
        info["embedding_error"] = str(exc)
        if progress is not None:
            progress(f"embedding failed: {exc}")
        return
    seconds = time.perf_counter() - started
    info["embedded"] = embedded
    info["embed_seconds"] = round(seconds, 1)
    if embedded and seconds > 0:
        info["embed_texts_per_s"] = round(embedded / seconds, 1)


def evaluate_set(
    evalset: EvalSet,
    *,
    layers: Sequence[str] = LAYERS,
    embedder: Embedder | str | None = None,
    baseline: bool = True,
    index_home: Path | None = None,
    progress: Progress | None = None,
    settings: Settings | None = None,
) -> Report:
    """Index `evalset` into a temporary home and score each of `layers` (and the baseline).

    `embedder` is an `Embedder` or a spec (`make_embedder`); `None` keeps huiyi's default.
    `index_home` keeps the index there (and reuses what it already holds, so a second run
    embeds nothing new) instead of a directory removed afterwards. `progress` receives
    one-line status messages (the CLI prints them on stderr).
    """
    from huiyi.eval.baseline import Bm25Baseline
    from huiyi.search.embedding.factory import make_embedder

    unknown = [layer for layer in layers if layer not in LAYERS]
    if unknown:
        raise UsageError(f"unknown layer {unknown[0]!r}; use one of: {', '.join(LAYERS)}")
    if not evalset.queries:
        raise UsageError(f"{evalset.name} has no queries to evaluate")
    base = settings if settings is not None else Settings.from_env()
    if isinstance(embedder, str):  # a bad spec is the caller's mistake, not a failed layer
        embedder = make_embedder(embedder, api_key=base.embed_api_key)
    info: dict[str, object] = {}
    runs: list[LayerRun] = []
    if baseline:
        _require_baseline_packages()
        runs.append(run(evalset, Bm25Baseline(evalset), layer=BASELINE))
    with indexed(evalset, base, index_home=index_home, embedder=embedder, progress=progress) as hy:
        info["events"] = sum(len(s.events) for s in evalset.sessions)
        info["events_not_indexed"] = _check_index(hy, evalset)
        no_vectors: str | None = None
        if NEEDS_VECTORS.intersection(layers):
            semantic = hy.semantic
            info["embedder"] = semantic.model if semantic is not None else "none"
            _embed(hy, info, progress)
            embedded, embeddable = hy.coverage(all_workspaces=True)
            info["coverage"] = f"{embedded}/{embeddable}"
            if embedded == 0:
                no_vectors = "no vectors to search: " + str(
                    info.get("embedding_error", "nothing was embedded")
                )
        for layer in layers:
            if progress is not None:
                progress(f"searching {len(evalset.queries)} queries: {layer}")
            search = LayerSearch(hy, layer, unavailable=no_vectors if layer == "semantic" else None)
            layer_run = run(evalset, search, layer=layer)
            layer_run.ran = dict(search.ran)
            runs.append(layer_run)
    return Report(evalset.name, runs, evalset.skipped, info)
