"""What a user has (TREC runs and qrels, a score table, a DataFrame, ranx's Run and Qrels, a checkpoint) as the two
inputs an assessment needs.

Maps, thresholds and abstention rules are fitted on one set of queries and judged on another:
:func:`load` returns both (:class:`Inputs`: ``valid``, ``test``) with notes on how queries were
split, judged or left out. Without a validation input, a permutation drawn from ``seed`` splits
the queries in halves. The checkpoint scorer (torch, transformers: the ``checkpoint`` extra) is
imported only when a checkpoint is given, so reading a run needs neither.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrank.assess.options import Settings, check_option, resolve
from calibrank.assess.read.rows import Qrels
from calibrank.assess.read.score_tables import as_qrels, from_dataframe, from_ranx, is_frame, is_ranx, read_table
from calibrank.assess.read.scored import AssessError, ScoredRun, ScoreKind
from calibrank.assess.read.trec import read_runs

__all__ = ["Inputs", "load", "CHECKPOINT_EXTRA"]

#: what scoring a checkpoint needs beyond the core (pyproject's ``checkpoint`` extra)
CHECKPOINT_EXTRA = ("torch", "transformers", "safetensors")

PathLike = str | os.PathLike
Runs = PathLike | Sequence[PathLike]


@dataclass(frozen=True)
class Inputs:
    """``valid``: the queries to fit on; ``test``: the queries to judge on; ``notes``: sentences for the report."""

    test: ScoredRun
    valid: ScoredRun
    notes: list[str]

    def __post_init__(self) -> None:
        for name in ("test", "valid"):
            if not isinstance(getattr(self, name), ScoredRun):
                raise AssessError(f"{name}: expected a ScoredRun, got {type(getattr(self, name)).__name__}")
        if self.test.kind is not self.valid.kind:
            raise AssessError(
                f"valid: its scores are {self.valid.kind.value} but the test scores are "
                f"{self.test.kind.value}; expected one kind of score"
            )


def _given(**named: Any) -> list[str]:
    return [name for name, value in named.items() if value is not None]


def _check_params(run, qrels, valid_run, valid_qrels, table, valid_table, checkpoint, queries, valid_queries) -> None:
    sources = _given(run=run, table=table, checkpoint=checkpoint)
    if len(sources) != 1:
        raise AssessError(
            f"run, table, checkpoint: expected exactly one of them, got {' and '.join(sources) if sources else 'none'}"
        )
    pairs = {
        "valid_run": (valid_run, "run"),
        "valid_table": (valid_table, "table"),
        "queries": (queries, "checkpoint"),
        "valid_queries": (valid_queries, "checkpoint"),
    }
    for name, (value, needs) in pairs.items():
        if value is not None and sources[0] != needs:
            raise AssessError(f"{name}: goes with {needs}=..., but {sources[0]}=... was given")
    if run is not None and qrels is None and not _judges_itself(run):
        raise AssessError(
            "qrels: a TREC run needs qrels to judge its candidates (a DataFrame run may judge itself "
            "with a relevance column)"
        )
    if valid_run is not None and valid_qrels is None and qrels is None and not _judges_itself(valid_run):
        raise AssessError(
            "valid_qrels: a TREC valid_run needs qrels (valid_qrels or qrels) to judge its candidates "
            "(a DataFrame run may judge itself with a relevance column)"
        )
    if checkpoint is not None and queries is None:
        raise AssessError("queries: a checkpoint needs the queries (JSONL) it is to score")
    if valid_qrels is not None and valid_run is None and valid_table is None and valid_queries is None:
        raise AssessError("valid_qrels: given without a validation input (valid_run, valid_table or valid_queries)")


def _judges_itself(run: Any) -> bool:
    return isinstance(run, ScoredRun) or is_frame(run) and any(c in run.columns for c in ("label", "relevance"))


def _scored(
    given: Any, qrels: Qrels | None, name: str, kind: Any, relevant_at: int, *, table: bool = False
) -> ScoredRun:
    """A run or table as given: file(s), a DataFrame (ir_measures' columns or ours), ranx's ``Run`` or a
    :class:`ScoredRun` already read."""
    if isinstance(given, ScoredRun):
        return given
    if is_frame(given):
        return from_dataframe(given, qrels=qrels, kind=kind, relevant_at=relevant_at, name=name)
    if is_ranx(given, "Run"):
        return from_ranx(given, qrels=qrels, kind=kind, relevant_at=relevant_at, name=name)
    if not isinstance(given, (str, os.PathLike, Sequence)):
        raise AssessError(
            f"{name}: expected a file, a list of files, a DataFrame or a ranx Run, got {type(given).__name__}"
        )
    if not isinstance(given, (str, os.PathLike)) and any(is_frame(g) or is_ranx(g, "Run") for g in given):
        raise AssessError(f"{name}: several DataFrames or ranx Runs; expected one, with a 'sample' column for samples")
    if table:
        if not isinstance(given, (str, os.PathLike)):
            raise AssessError(
                f"{name}: expected one table file (its samples in a 'sample' column) or a DataFrame, "
                f"got a {type(given).__name__}"
            )
        return read_table(given, qrels=qrels, kind=kind, relevant_at=relevant_at)
    if qrels is None:  # _check_params lets no TREC run through without qrels
        raise AssessError(f"{name}: a TREC run needs qrels to judge its candidates")
    return read_runs(given, qrels, kind=kind, relevant_at=relevant_at)


def _from_checkpoint(
    path: PathLike, queries: PathLike, qrels: Qrels | None, passes: int, relevant_at: int
) -> ScoredRun:
    try:  # the scorer's module imports torch and transformers: loaded only for a checkpoint
        score_checkpoint = importlib.import_module(".checkpoint", __package__).score_checkpoint
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in CHECKPOINT_EXTRA:
            raise
        raise AssessError("--checkpoint needs the optional dependencies: pip install 'calibrank[checkpoint]'") from None
    return score_checkpoint(
        path,
        queries,
        passes=passes,
        relevant_at=relevant_at,
        **({"qrels": qrels.to_dict()} if qrels is not None else {}),
    )


def _input_notes(scored: ScoredRun, role: str) -> list[str]:
    notes = []
    meta = scored.meta
    if meta.get("dropped_queries"):
        shown = ", ".join(map(repr, meta.get("dropped_qids", [])[:5]))
        notes.append(
            f"{meta['dropped_queries']} of the {meta.get('queries_in_run')} queries of {scored.source} have no "
            f"qrels entry and are left out, as trec_eval does (e.g. {shown})."
        )
    if scored.n_samples > 1:
        notes.append(f"{scored.source}: {scored.n_samples} samples of each score{f' ({role})' if role else ''}.")
    frac = scored.judged_fraction
    note = (
        f"The qrels judge {100 * frac:.1f}% of the candidates of {scored.source}{f' ({role})' if role else ''}: "
        "unjudged candidates count as non-relevant."
    )
    if frac < 0.5:
        note += (
            " That is under half: calibration measured on an unjudged pool is biased low (relevant documents that "
            "nobody judged count as misses)."
        )
    notes.append(note)
    return notes


def _no_relevant_note(scored: ScoredRun, role: str) -> str | None:
    n = int((~scored.answerable).sum())
    if not n:
        return None
    missed = int(((~scored.answerable) & (scored.n_relevant > 0)).sum())
    text = (
        f"{n} of the {len(scored.qids)} {role} queries have no relevant candidate in their list: they are the "
        "none-of-the-above cases of the abstention analyses."
    )
    if missed:
        text += (
            f" {missed} of them have a relevant document in the qrels that the run did not retrieve: the ranking "
            "metrics count them as misses, as trec_eval does."
        )
    if n - missed:
        text += f" {n - missed} have no relevant document in the qrels at all: the ranking metrics leave them out."
    return text


def load(
    *,
    run: Runs | Any | None = None,
    qrels: Qrels | PathLike | Any | None = None,
    valid_run: Runs | Any | None = None,
    valid_qrels: Qrels | PathLike | Any | None = None,
    table: PathLike | Any | None = None,
    valid_table: PathLike | Any | None = None,
    checkpoint: PathLike | None = None,
    queries: PathLike | None = None,
    valid_queries: PathLike | None = None,
    passes: int = 0,
    settings: Settings | None = None,
    **given: Any,
) -> Inputs:
    """Read one ranker's test and validation inputs, whatever form they come in, with notes.

    Maps and cutoffs are fitted on one set of queries and judged on another: the ``valid_*``
    input when given, else a seeded half of the queries. Exactly one of ``run``, ``table`` or
    ``checkpoint``. A run or table may also be a pandas DataFrame (ir_measures' ``query_id``,
    ``doc_id``, ``score`` [, ``relevance``], or ``qid``, ``docid``, ``score`` [, ``label``]) or
    ranx's ``Run``; qrels a DataFrame, ranx's ``Qrels`` or ``{qid: {docid: grade}}``, besides a
    file or :class:`Qrels`.

    Parameters
    ----------
    run, valid_run : path, sequence of paths, DataFrame or ranx.Run, default=None
        TREC run file(s) (several: samples of one ranker), or a frame or ranx run.
    qrels, valid_qrels : Qrels, path, DataFrame, ranx.Qrels or dict, default=None
        The judgments (``valid_qrels`` defaults to ``qrels``).
    table, valid_table : path or DataFrame, default=None
        Score tables (:func:`calibrank.assess.read.score_tables.read_table`).
    checkpoint : path, default=None
        A local cross-encoder checkpoint (needs the ``checkpoint`` extra).
    queries, valid_queries : path, default=None
        JSONL queries and candidates for ``checkpoint`` to score.
    passes : int, default=0
        MC Dropout passes of the checkpoint (0: one deterministic pass).
    settings : Settings, default=None
        Its ``score`` (what a score is), ``relevant_at`` (the lowest relevant grade) and ``seed`` (the split
        into halves when no validation input is given) are read (:class:`~calibrank.assess.options.Settings`).
    **given
        The settings as keywords instead (``score="logit"``).

    Returns
    -------
    Inputs
        ``test``, ``valid`` (:class:`ScoredRun`) and ``notes`` (sentences for the report).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"qid": [f"q{i // 2}" for i in range(8)], "docid": [f"d{i}" for i in range(8)],
    ...                    "score": [2.0, 0.1] * 4, "label": [1, 0] * 4})
    >>> inputs = load(run=df, score="logit")
    >>> len(inputs.valid.qids), len(inputs.test.qids)              # a seeded half each
    (2, 2)
    >>> inputs.notes[0].startswith("No validation run was given")
    True
    """
    settings = resolve(settings, given, "load")
    kind, relevant_at, seed = ScoreKind(settings.score), settings.relevant_at, settings.seed
    passes = check_option("passes", passes)
    _check_params(run, qrels, valid_run, valid_qrels, table, valid_table, checkpoint, queries, valid_queries)
    qrels = as_qrels(qrels, "qrels")
    valid_qrels = as_qrels(valid_qrels, "valid_qrels") if valid_qrels is not None else qrels
    if run is not None:
        full = _scored(run, qrels, "run", kind, relevant_at)
        valid = None if valid_run is None else _scored(valid_run, valid_qrels, "valid_run", kind, relevant_at)
    elif table is not None:
        full = _scored(table, qrels, "table", kind, relevant_at, table=True)
        valid = (
            None
            if valid_table is None
            else _scored(valid_table, valid_qrels, "valid_table", kind, relevant_at, table=True)
        )
    elif checkpoint is not None and queries is not None:
        full = _from_checkpoint(checkpoint, queries, qrels, passes, relevant_at)
        valid = (
            None
            if valid_queries is None
            else _from_checkpoint(checkpoint, valid_queries, valid_qrels, passes, relevant_at)
        )
    else:  # _check_params lets exactly one source through, a checkpoint with its queries
        raise AssessError("run, table, checkpoint: expected exactly one of them, with the queries of a checkpoint")

    notes: list[str] = []
    if valid is None:
        n = len(full.qids)
        if n < 2:
            raise AssessError(
                f"{full.source}: {n} query with judgments; expected at least 2 to split into a half to fit "
                "on and a half to judge on (or give a validation input)"
            )
        perm = np.random.default_rng(seed).permutation(n)
        fit, judge = np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])
        notes.append(
            f"No validation run was given: recalibration maps and thresholds are fitted on a seeded half "
            f"(seed {seed}) of the queries ({len(fit)} queries), judged on the other half ({len(judge)} queries)."
        )
        notes += _input_notes(full, "")
        valid, test = full.subset(fit), full.subset(judge)
        valid.meta["split"] = {"seed": seed, "half": "fit", "queries": len(fit), "of": n}
        test.meta["split"] = {"seed": seed, "half": "judge", "queries": len(judge), "of": n}
    else:
        test = full
        notes.append(
            f"Fitted on {valid.source} ({len(valid.qids)} queries), judged on {test.source} ({len(test.qids)} queries)."
        )
        shared = np.intersect1d(valid.qids, test.qids)
        if len(shared):
            notes.append(
                f"{len(shared)} queries are in both the validation and the test input (e.g. {str(shared[0])!r}): "
                "what is fitted on them is also judged on them, so the test figures are optimistic."
            )
        notes += _input_notes(valid, "validation") + _input_notes(test, "test")
    notes += [n for n in (_no_relevant_note(valid, "validation"), _no_relevant_note(test, "test")) if n]
    notes.append(f"A candidate counts as relevant when its grade is at least {relevant_at}.")
    return Inputs(test=test, valid=valid, notes=notes)
