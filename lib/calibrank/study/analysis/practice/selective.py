"""Answer or abstain: risk-coverage analysis of "answer with the top-ranked response, or say nothing".

The loss is ``1 - R@1`` of the top candidate; a confidence orders the queries. Selective risk
(El-Yaniv & Wiener 2010), AURC (Geifman, Uziel & El-Yaniv 2019, eq. 3), E-AURC (their section 4,
with the exact oracle) and AUGRC (Traub et al. 2024, eq. 4), and the selective risk at a coverage.
Tied confidences share their mean loss, the expectation over orders of the tied queries.
Intervals: :func:`selective_intervals`. Definitions in full: docs/decisions.md, "Selective answering".
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from calibrank.methods import intervals
from calibrank.methods.selective import (
    CONFIDENCES,
    COVERAGE,
    confidences,
    risk_column,
    risk_coverage,
    selective_intervals,
    selective_scores,
)
from calibrank.study.analysis.calibration import default_condition
from calibrank.study.analysis.practice.cells import CELL, rows_problems, study_cells
from calibrank.table_checks import TOLERANCE, describe, in_range, raise_problems, rows_failing

__all__ = ["selective_table", "selective_curves"]


def selective_table(
    study, rankers: Iterable[str] | None = None, *, coverage: float = COVERAGE, n_resamples: int = intervals.N_RESAMPLES
) -> pd.DataFrame:
    """One row per ranker x test condition x confidence score (main training seed): ``AURC``,
    ``E-AURC``, ``AUGRC``, ``risk@<coverage>``, each followed by ``<name> lo`` / ``<name> hi``
    (95% bootstrap interval over test queries, :func:`selective_intervals`, seeded with the
    profile seed), and the full-coverage ``risk``; ``-top var`` only for rankers with S > 1. Raises
    :class:`~calibrank.table_checks.TableError` naming a row that breaks an invariant of :func:`_table_problems`."""
    label = risk_column(coverage)
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            s = selective_scores(conf[name].to_numpy(), loss, coverage=coverage)
            lo, hi = selective_intervals(
                conf[name].to_numpy(), loss, coverage=coverage, seed=study.cfg.seed, n_resamples=n_resamples
            )
            row = {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                "confidence": name,
                "queries": int(loss.size),
            }
            for j, (col, value) in enumerate(
                (("AURC", s.aurc), ("E-AURC", s.eaurc), ("AUGRC", s.augrc), (label, s.risk_at_coverage))
            ):
                row.update({col: value, f"{col} lo": float(lo[j]), f"{col} hi": float(hi[j])})
            rows.append({**row, "risk": s.risk})
    table = pd.DataFrame(rows)
    raise_problems(_table_problems(study, table, rankers, label))
    return table


def _table_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None, risk_at: str) -> list[str]:
    """One row per cell and confidence (``-top var`` exactly for the study's rankers with S > 1); AURC and
    ``risk_at`` in [0, 1], ``E-AURC >= 0`` (no confidence beats the oracle), ``AUGRC <= AURC`` (``g(i) <= r(i)``),
    each interval ordered; one full-coverage risk per cell (the loss does not depend on the confidence)."""
    name, keys = "selective", (*CELL, "confidence")
    stochastic = set(study.stochastic_rankers())
    problems = rows_problems(
        name,
        table,
        keys,
        [
            (*c, conf)
            for c in study_cells(study, rankers)
            for conf in CONFIDENCES
            if conf != "-top var" or c[0] in stochastic
        ],
    )
    if table.empty:
        return problems
    problems += rows_failing(
        name, table, table["E-AURC"] >= -TOLERANCE, keys, f"E-AURC >= 0 (within {TOLERANCE:g})", ["E-AURC"]
    )
    problems += rows_failing(
        name,
        table,
        table["AUGRC"] <= table["AURC"] + TOLERANCE,
        keys,
        f"AUGRC <= AURC (within {TOLERANCE:g})",
        ["AUGRC", "AURC"],
    )
    for col in ("AURC", risk_at):
        problems += in_range(name, table, col, keys, 0, 1)
    for col in ("AURC", "E-AURC", "AUGRC", risk_at):
        lo, hi = table[f"{col} lo"], table[f"{col} hi"]
        problems += rows_failing(
            name,
            table,
            lo <= hi + TOLERANCE,
            keys,
            f"{col} lo <= {col} hi (within {TOLERANCE:g})",
            [f"{col} lo", f"{col} hi"],
        )
    for cell, n in table.groupby(list(CELL), sort=False)["risk"].nunique(dropna=False).items():
        if n != 1:
            problems.append(
                f"{name}: {describe(dict(zip(CELL, cell)), CELL)}: expected one risk for every confidence "
                f"(the loss does not depend on it), found {n} values"
            )
    return problems


def selective_curves(
    study, condition=None, train_corpus: str | None = None, rankers: Iterable[str] | None = None
) -> pd.DataFrame:
    """Risk-coverage curves on one condition (default: in distribution): one row per ranker x confidence x coverage."""
    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    frames = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            frames.append(
                risk_coverage(conf[name].to_numpy(), loss).assign(ranker=ranker, confidence=name, condition=cond.name)
            )
    return pd.concat(frames, ignore_index=True)
