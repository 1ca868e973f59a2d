"""Notebook 04's numbers: metrics per cell with intervals, Penha & Hauff Tables 1-2 and Figure 2, reliability, the 2023 layouts."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from calibrank.metrics.calibration import brier, ece, nll, reliability_curve
from calibrank.metrics.ranking import ranking_metrics
from calibrank.metrics.resample import features, interval
from calibrank.predictions import Predictions
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.load import BASELINE, CELL_KEYS, Study
from calibrank.study.analysis.subsets import subset_negatives
from calibrank.study.data.baselines import DISPLAY_NAMES as RULES
from calibrank.study.data.baselines import BaselineName, load_baseline
from calibrank.study.data.conditions import Condition
from calibrank.study.settings.config import training_seeds
from calibrank.table_checks import (
    TOLERANCE,
    describe,
    fmt,
    in_range,
    not_nan,
    raise_problems,
    rows_expected,
    rows_failing,
)

MEAN_METRICS = ("R@1", "MAP", "MRR")
"""Metrics that are means of per-query values: their bootstrap interval contains the value (a
percentile interval of a biased statistic such as ECE need not)."""


# ------------------------------------------------------------------------------ metrics
def _cell_metrics(pred: Predictions, seed: int) -> dict[str, float]:
    rank = ranking_metrics(pred.probs, pred.labels, ks=(1,))
    balanced = subset_negatives(pred, 1, seed=seed)
    return {
        "R@1": rank["R@1"],
        "MAP": rank["MAP"],
        "MRR": rank["MRR"],
        "ECE 1:1": ece(balanced.probs, balanced.labels),
        "ECE": ece(pred.probs, pred.labels),
        "Brier": brier(pred.probs, pred.labels),
        "NLL": nll(pred.probs, pred.labels),
        "mean var": float(pred.var.mean()),
    }


def metrics_table(study: Study, split: str = "test", rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per ranker x training corpus x condition of ``split`` x seed.

    Columns: ``ranker``, ``train_corpus``, ``corpus``, ``sampler``, ``shift``, ``seed``, ``S``,
    ``queries``, ``R@1``, ``MAP``, ``MRR`` (pessimistic ties), ``ECE 1:1`` (balanced set, the
    first paper's Table 1; negatives drawn with the profile seed), ``ECE`` (all candidates),
    ``Brier``, ``NLL``, ``mean var``.
    """
    rows = []
    for ranker, tc, cond in study.cells(split, rankers):
        for pred in study.runs(ranker, tc, cond):
            seed = study.seed_of(pred)
            rows.append(
                {
                    "ranker": ranker,
                    "train_corpus": tc,
                    "corpus": cond.corpus,
                    "sampler": cond.sampler,
                    "shift": study.shift(cond, tc),
                    "seed": seed,
                    "S": pred.n_samples,
                    "queries": int(pred.labels.shape[0]),
                    **_cell_metrics(pred, study.cfg.seed),
                }
            )
    out = pd.DataFrame(rows)
    _check_metrics(out, study.expected_cells(split, rankers))
    return out


def _check_metrics(table: pd.DataFrame, cells: list[tuple[str, ...]]) -> None:
    """Every cell (one row per seed), no NaN metric."""
    raise_problems(
        rows_expected("metrics (distinct cells)", table[list(CELL_KEYS)].drop_duplicates(), CELL_KEYS, cells)
        + not_nan("metrics", table, [*unc.CELL_METRICS, "mean var"], [*CELL_KEYS, "seed"])
    )


_KEYS = ["train_corpus", "corpus", "sampler", "shift"]


def _interval_row(runs: list[Predictions], seed: int, n_resamples: int) -> dict[str, float]:
    return {
        "seeds": len(runs),
        "S": runs[0].n_samples,
        "queries": int(runs[0].labels.shape[0]),
        **unc.cell_estimates(runs, seed=seed, n_resamples=n_resamples),
        "intervals": unc.seeds_note(len(runs)),
    }


def interval_table(
    study: Study, split: str = "test", rankers: Iterable[str] | None = None, *, n_resamples: int = unc.N_RESAMPLES
) -> pd.DataFrame:
    """One row per ranker x training corpus x condition, every seed together: each metric of
    :data:`calibrank.study.analysis.uncertainty.CELL_METRICS` with ``<metric> lo`` / ``<metric> hi``,
    its 95% bootstrap interval over test queries (and training seeds when there are several;
    the ``intervals`` column says which). Values are means over seeds."""
    rows = []
    for ranker, tc, cond in study.cells(split, rankers):
        rows.append(
            {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                **_interval_row(study.runs(ranker, tc, cond), study.cfg.seed, n_resamples),
            }
        )
    out = pd.DataFrame(rows)
    _check_intervals(out, study.expected_cells(split, rankers))
    return out


def _check_intervals(table: pd.DataFrame, cells: list[tuple[str, ...]]) -> None:
    """Every cell once; each metric of :data:`calibrank.study.analysis.uncertainty.INTERVAL_METRICS` with a
    value and an interval, ``lo <= hi``; the value inside its interval for :data:`MEAN_METRICS` and every debiased ECE."""
    name = "intervals"
    problems = rows_expected(name, table, CELL_KEYS, cells)
    for m in unc.INTERVAL_METRICS:
        lo, hi = f"{m} lo", f"{m} hi"
        finite = table[[m, lo, hi]].notna().all(axis=1)
        problems += rows_failing(name, table, finite, CELL_KEYS, f"no NaN in {m} and its interval", [m, lo, hi])
        problems += rows_failing(name, table, ~finite | (table[lo] <= table[hi]), CELL_KEYS, f"{lo} <= {hi}", [lo, hi])
    for m in (*MEAN_METRICS, *(f"{e} debiased" for e in unc.ECE_METRICS)):
        lo, hi = f"{m} lo", f"{m} hi"
        inside = (table[lo] <= table[m] + TOLERANCE) & (table[m] <= table[hi] + TOLERANCE)
        problems += rows_failing(
            name,
            table,
            inside,
            CELL_KEYS,
            f"{m} inside its interval, {lo} <= {m} <= {hi} (within {TOLERANCE:g})",
            [lo, m, hi],
        )
    raise_problems(problems)


def baseline_interval_table(study: Study, split: str = "test", *, n_resamples: int = unc.N_RESAMPLES) -> pd.DataFrame:
    """:func:`interval_table` for the no-learning rules (``ranker`` = ``baseline:<name>``, one row per training corpus)."""
    return pd.DataFrame(
        [{**keys, **_interval_row([pred], study.cfg.seed, n_resamples)} for keys, pred in _baseline_cells(study, split)]
    )


def _baseline_cells(study: Study, split: str):
    """``(row keys, Predictions)`` of every rule x training corpus x condition of ``split``."""

    for name in BaselineName:
        for tc in study.train_corpora:
            for cond in study.test_conditions(split):
                yield (
                    {
                        "ranker": f"baseline:{name.value}",
                        "train_corpus": tc,
                        "corpus": cond.corpus,
                        "sampler": cond.sampler,
                        "shift": study.shift(cond, tc),
                    },
                    load_baseline(study.cfg, name, tc, cond),
                )


# ------------------------------------------------------------------------------ seed spread
SPREAD_RANKER = "ensemble"
"""The ranker whose samples are ``bert`` models that differ only in their training seed
(:mod:`calibrank.study.model.rankers.ensemble`: S = M members, member 0 is the ``bert`` model of the run's seed)."""

SPREAD_METRICS = ("R@1", "ECE 1:1", "ECE")
"""The metrics of :func:`seed_spread`, as :func:`metrics_table` names them."""

_SPREAD_STATS = ("seed min", "seed max", "seed sd")
SEED_MODELS = "seed models"
"""The column that counts the models behind a seed spread (0: the profile has no ensemble)."""


def _member_metrics(pred: Predictions, seed: int) -> np.ndarray:
    """``[S, 3]``: :data:`SPREAD_METRICS` of each sample of ``pred`` read as the probabilities of a ranker of its own."""
    balanced = subset_negatives(pred, 1, seed=seed)
    return np.array(
        [
            [
                ranking_metrics(pred.samples[s], pred.labels, ks=(1,))["R@1"],
                ece(balanced.samples[s], balanced.labels),
                ece(pred.samples[s], pred.labels),
            ]
            for s in range(pred.n_samples)
        ]
    )


def seed_spread(study: Study, split: str = "test", *, ranker: str = SPREAD_RANKER) -> pd.DataFrame:
    """How far ``bert``'s R@1 and ECE move with its training seed, read from the ensemble's members at no extra training.

    Each member of :data:`SPREAD_RANKER` is a ``bert`` model trained by the same loop on the same data with its own
    seed (Lakshminarayanan et al. 2017's Deep Ensembles; Penha & Hauff 2021, sec. 3.2), and its Predictions keep one
    sample per member: each sample, read as a ranker of its own, is one training seed's ``bert``. Member 0 is the
    ``bert`` model of the run's seed, so ``bert``'s own number is one of the points. With several training seeds the
    members of every seed's ensemble are pooled (all distinct models).

    One row per training corpus x condition of ``split``: ``seed models`` (the models), ``training seeds``, and for
    each of :data:`SPREAD_METRICS` (R@1 with ties against the relevant candidate; ECE eq. 1 on the balanced set drawn
    with the profile seed, as Table 1's, and on all candidates) its ``seed min``, ``seed max`` and ``seed sd`` (sample
    sd over the models). The spread is over models, not queries: every model is scored on the same queries, so it
    says how much one training seed can move a number that the interval over queries holds fixed. Empty (with these
    columns) when the profile has no ``ranker``.
    """
    columns = [*_KEYS, SEED_MODELS, "training seeds", *(f"{m} {s}" for m in SPREAD_METRICS for s in _SPREAD_STATS)]
    if ranker not in study.rankers:
        return pd.DataFrame(columns=columns)
    rows = []
    for _, tc, cond in study.cells(split, [ranker]):
        runs = study.runs(ranker, tc, cond)
        values = np.concatenate([_member_metrics(p, study.cfg.seed) for p in runs])
        row = {**study.cell_keys(tc, cond), SEED_MODELS: int(values.shape[0]), "training seeds": len(runs)}
        for j, m in enumerate(SPREAD_METRICS):
            v = values[:, j]
            row.update(
                {
                    f"{m} seed min": float(v.min()),
                    f"{m} seed max": float(v.max()),
                    f"{m} seed sd": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
                }
            )
        rows.append(row)
    out = pd.DataFrame(rows, columns=columns)
    _check_spread(study, out, split, ranker)
    return out


def _check_spread(study: Study, table: pd.DataFrame, split: str, ranker: str) -> None:
    """One row per cell of ``ranker``; as many models as its samples over its seeds; min <= max, sd >= 0,
    every value in [0, 1]."""
    name, keys = "seed spread", ("train_corpus", "corpus", "sampler")
    problems = rows_expected(name, table, keys, [cell[1:] for cell in study.expected_cells(split, [ranker])])
    want = study.n_samples(ranker) * len(training_seeds(study.cfg))
    problems += rows_failing(
        name,
        table,
        table[SEED_MODELS] == want,
        keys,
        f"{want} models ({ranker}'s samples x training seeds)",
        [SEED_MODELS],
    )
    for m in SPREAD_METRICS:
        lo, hi, sd = (f"{m} {s}" for s in _SPREAD_STATS)
        problems += in_range(name, table, lo, keys, 0, 1) + in_range(name, table, hi, keys, 0, 1)
        problems += rows_failing(name, table, table[lo] <= table[hi], keys, f"{lo} <= {hi}", [lo, hi])
        problems += rows_failing(name, table, (table[sd] >= 0) | (table[SEED_MODELS] < 2), keys, f"{sd} >= 0", [sd])
    raise_problems(problems)


def format_spread(low: float, high: float, sd: float, models: int, digits: int = 3) -> str:
    """``"0.583–0.667 (sd 0.042, 3 seeds)"``; ``""`` without models (no ensemble in the profile)."""
    if not models or not (np.isfinite(low) and np.isfinite(high)):
        return ""
    spread = f"{low:.{digits}f}–{high:.{digits}f}"
    return (
        f"{spread} (sd {sd:.{digits}f}, {int(models)} seeds)" if np.isfinite(sd) else f"{spread} ({int(models)} seed)"
    )


def _with_spread(table: pd.DataFrame, spread: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``table`` with ``seed models`` and each spread column of ``spread`` (metric renamed by ``names``) matched on
    the cell; a cell without a spread gets 0 models and NaN."""
    keys = ["train_corpus", "corpus", "sampler"]
    cols = {f"{m} {s}": f"{names.get(m, m)} {s}" for m in SPREAD_METRICS for s in _SPREAD_STATS}
    right = spread[[*keys, SEED_MODELS, *cols]].rename(columns=cols)
    out = table.merge(right, on=keys, how="left", validate="one_to_one")
    out[SEED_MODELS] = out[SEED_MODELS].fillna(0).astype(int)
    return out


def table1(
    study: Study, intervals: pd.DataFrame | None = None, ranker: str = BASELINE, spread: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Penha & Hauff Table 1: ``bert``'s R10@1, balanced ECE and full ECE per test condition, with intervals.

    One row per training corpus x test corpus x sampler from :func:`interval_table`: R10@1 with
    ``lo`` / ``hi``, each ECE as eq. 1 with its debiased value, interval and ``bias``, the shift kind,
    queries and seeds. The rows of one test corpus are the paper's columns.

    ``bert``'s table adds its seed spread (:func:`seed_spread`, computed unless ``spread`` gives it):
    ``seed models`` and ``<metric> seed min`` / ``seed max`` / ``seed sd`` of R10@1 and both ECEs (eq. 1),
    after the columns above, whose values do not depend on it; NaN and 0 models without an ensemble.
    """
    iv = intervals if intervals is not None else interval_table(study, rankers=[ranker])
    iv = iv[iv["ranker"] == ranker]
    if iv.empty:
        raise ValueError(f"no metrics for ranker {ranker!r}")
    rl, full = study.recall_label, f"ECE 1:{study.k}"
    out = iv[_KEYS].copy()
    for suffix in ("", " lo", " hi"):
        out[rl + suffix] = iv["R@1" + suffix].to_numpy()
    for src, dst in (("ECE 1:1", "ECE 1:1"), ("ECE", full)):
        for suffix in ("", " debiased", " debiased lo", " debiased hi", " bias"):
            out[dst + suffix] = iv[src + suffix].to_numpy()
    out["queries"] = iv["queries"].to_numpy()
    out["seeds"] = iv["seeds"].to_numpy()
    out = out.reset_index(drop=True)
    if ranker == BASELINE:
        out = _with_spread(out, spread if spread is not None else seed_spread(study), {"R@1": rl, "ECE": full})
    _check_table1(study, out, "table1" if ranker == BASELINE else f"table1 of {ranker}")
    return out


def _conditions(study: Study) -> list[tuple[str, str, str]]:
    """``(train corpus, test corpus, sampler)`` of every test condition of every training corpus."""
    return [(tc, c.corpus, c.sampler) for tc in study.train_corpora for c in study.test_conditions()]


def _check_table1(study: Study, table: pd.DataFrame, name: str) -> None:
    """One row per training corpus x test condition, no NaN, R@1 in [0, 1], both ECEs in [0, 1), one
    in-distribution row per training corpus."""
    keys = ("train_corpus", "corpus", "sampler")
    problems = rows_expected(name, table, keys, _conditions(study))
    spread = [c for c in table.columns if c.endswith(_SPREAD_STATS)]
    problems += not_nan(name, table, [c for c in table.columns if c not in spread], keys)
    if spread:  # a seed spread where there are models, none without
        problems += rows_failing(
            name,
            table,
            (table[SEED_MODELS] > 0) == table[spread].notna().all(axis=1),
            keys,
            "every seed spread column given where there are seed models and NaN where there are none",
            [SEED_MODELS, *spread],
        )
    problems += in_range(name, table, study.recall_label, keys, 0, 1, allow_nan=True)  # NaN: reported above
    for c in ("ECE 1:1", f"ECE 1:{study.k}"):
        problems += in_range(name, table, c, keys, 0, 1, high_open=True, allow_nan=True)
    in_dist = table[table["shift"] == "in distribution"]["train_corpus"].value_counts()
    problems += [
        f"{name}: train_corpus={tc}: expected 1 in-distribution row, found {int(in_dist.get(tc, 0))}"
        for tc in study.train_corpora
        if in_dist.get(tc, 0) != 1
    ]
    problems += [
        f"{name}: train_corpus={tc}: expected no in-distribution row (not a training corpus), found {int(n)}"
        for tc, n in in_dist.items()
        if tc not in study.train_corpora
    ]
    raise_problems(problems)


def baseline_metrics_table(study: Study, split: str = "test") -> pd.DataFrame:
    """:func:`metrics_table`'s columns for the no-learning rules of :mod:`calibrank.study.data.baselines` (``ranker`` = ``baseline:<name>``).

    Their Platt maps are fitted per training corpus, so they have one row per training corpus
    like a trained ranker; ``seed`` is the profile seed (the rules' tie-breaks).
    """
    return pd.DataFrame(
        [
            {
                **keys,
                "seed": study.cfg.seed,
                "S": 1,
                "queries": int(pred.labels.shape[0]),
                **_cell_metrics(pred, study.cfg.seed),
            }
            for keys, pred in _baseline_cells(study, split)
        ]
    )


def table1_reference(study: Study, baseline_intervals: pd.DataFrame) -> pd.DataFrame:
    """Table 1's columns for each no-learning rule: the reference rows a reader compares ``bert`` with."""

    out = pd.concat(
        [
            table1(study, baseline_intervals, ranker=r).assign(ranker=r)
            for r in dict.fromkeys(baseline_intervals["ranker"])
        ],
        ignore_index=True,
    )
    raise_problems(
        rows_expected(
            "table1 rules",
            out,
            ("ranker", "train_corpus", "corpus", "sampler"),
            [(f"baseline:{n.value}", *cond) for n in BaselineName for cond in _conditions(study)],
            what="one per rule of calibrank.study.data.baselines.BaselineName and condition",
        )
    )
    return out


def _value_metrics(df: pd.DataFrame) -> list[str]:
    """The metric columns of a table with ``<metric> lo`` / ``<metric> hi`` companions."""
    return [c for c in df.columns if f"{c} lo" in df.columns and f"{c} hi" in df.columns]


def table1_wide(t1: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 1 in the paper's layout: rows = training corpus, columns = (test corpus · sampler, metric),
    each cell ``value [lo, hi]``.

    With ``reference`` (:func:`table1_reference`), the rules that learn nothing follow as rows
    of their own ("least overlap (Platt on chitchat)"). Where ``t1`` has a seed spread (:func:`seed_spread`),
    ``<metric> seed spread`` follows the metric's interval over queries, ``min–max (sd, models)``; empty for a rule.
    """

    t = t1.copy()
    t["row"] = "bert trained on " + t["train_corpus"]
    if reference is not None and not reference.empty:
        ref = reference.copy()
        ref["row"] = ref["ranker"].str.removeprefix("baseline:").map(RULES) + " (Platt on " + ref["train_corpus"] + ")"
        t = pd.concat([t, ref.drop(columns=["ranker"])], ignore_index=True)
    t["test on"] = t["corpus"] + " · " + t["sampler"]
    with_interval = _value_metrics(t1)
    shown = [
        c
        for c in t1.columns
        if c not in (*_KEYS, "queries", "seeds", SEED_MODELS) and not c.endswith((" lo", " hi", *_SPREAD_STATS))
    ]
    for m in shown:
        if m in with_interval:
            t[m] = [unc.format_interval(v, lo, hi) for v, lo, hi in zip(t[m], t[f"{m} lo"], t[f"{m} hi"])]
        else:
            t[m] = [f"{v:.3f}" if np.isfinite(v) else "" for v in t[m]]
    metrics = []
    for m in shown:  # a seed spread after the interval over queries of its metric (an ECE's: the debiased value's)
        metrics.append(m)
        base = m.removesuffix(" debiased")
        if f"{base} seed min" in t1.columns and (m.endswith(" debiased") or f"{m} debiased" not in shown):
            t[f"{base} seed spread"] = [
                format_spread(lo, hi, sd, n)
                for lo, hi, sd, n in zip(
                    t[f"{base} seed min"], t[f"{base} seed max"], t[f"{base} seed sd"], t[SEED_MODELS].fillna(0)
                )
            ]
            metrics.append(f"{base} seed spread")
    wide = t.pivot(index="row", columns="test on", values=metrics)
    wide = wide.reindex(list(dict.fromkeys(t["row"])))
    wide = wide.swaplevel(0, 1, axis=1)
    order = list(dict.fromkeys(t["test on"]))
    wide = wide.reindex(columns=pd.MultiIndex.from_product([order, metrics]))
    wide.index.name = None
    wide.columns.names = ["train on ↓ · test on →", ""]
    return wide


def significance_text(pvalue_holm: float, pvalue_worse_holm: float, mark: str, note: str = "") -> str:
    """``"p = 0.003 †"``, ``"p(worse) = 0.01 worse"``, ``"p = 0.41"`` or ``"no test: <why>"`` (Holm-adjusted p)."""
    if not np.isfinite(pvalue_holm):
        return f"no test: {note}" if note else "no test"
    if mark == unc.WORSE:
        return f"p(worse) = {pvalue_worse_holm:.3g} {unc.WORSE}"
    return f"p = {pvalue_holm:.3g}" + (f" {mark}" if mark else "")


def _marked(rows: list[dict]) -> pd.DataFrame:
    df = unc.mark_table(pd.DataFrame(rows)) if rows else pd.DataFrame(rows)
    if len(df):
        df["significance"] = [
            significance_text(p, pw, m, n)
            for p, pw, m, n in zip(df["pvalue_holm"], df["pvalue_worse_holm"], df["mark"], df["note"])
        ]
    return df


def table2(study: Study, *, ece_column: str = "ECE 1:1", n_resamples: int = unc.N_RESAMPLES) -> pd.DataFrame:
    """Penha & Hauff Table 2: change of ECE of every other ranker over ``bert`` per condition.

    ``rel_change`` is eq. 1's relative change (the paper's number; negative = better). ``change``,
    its interval ``lo``/``hi`` and the one-sided tests ``pvalue`` (lower ECE, the paper's claim) /
    ``pvalue_worse`` use the debiased ECE as a difference, Holm across the table (``*_holm``), and
    ``mark``. ``ece_column``: the balanced ECE of Table 1 (default) or ``"ECE"``. Why a difference
    of debiased ECEs: docs/decisions.md, "Penha & Hauff Table 2". ``<ece_column> seed range (bert)``:
    max - min of eq. 1's ECE over bert's models of :func:`seed_spread` (NaN without an ensemble), the
    change one training seed alone can make, beside the change between rankers.
    """
    if BASELINE not in study.rankers:
        raise ValueError(f"Table 2 needs the {BASELINE!r} ranker in the profile")
    metric = "ECE 1:1" if ece_column == "ECE 1:1" else "ECE"
    spread = seed_spread(study).set_index(["train_corpus", "corpus", "sampler"])
    seed_range = spread[f"{metric} seed max"] - spread[f"{metric} seed min"]
    rows = []
    for ranker in [r for r in study.rankers if r != BASELINE]:
        for _, tc, cond in study.cells("test", [ranker]):
            own, base = study.runs(ranker, tc, cond), study.runs(BASELINE, tc, cond)
            c = unc.cell_comparison(
                own, base, metric, seed=study.cfg.seed, alternative="less", relative=False, n_resamples=n_resamples
            )
            plain_own, plain_base = _plain_ece(own, metric, study.cfg.seed), _plain_ece(base, metric, study.cfg.seed)
            rows.append(
                {
                    "train_corpus": tc,
                    "corpus": cond.corpus,
                    "sampler": cond.sampler,
                    "shift": study.shift(cond, tc),
                    "ranker": ranker,
                    f"{ece_column} bert": plain_base,
                    f"{ece_column} ranker": plain_own,
                    "rel_change": (plain_own - plain_base) / plain_base if plain_base > 0 else float("nan"),
                    f"{ece_column} debiased bert": c["b"],
                    f"{ece_column} debiased ranker": c["a"],
                    "change": c["change"],
                    "lo": c["lo"],
                    "hi": c["hi"],
                    f"{ece_column} seed range (bert)": float(seed_range.get((tc, cond.corpus, cond.sampler), np.nan)),
                    "seeds": len(own),
                    "pvalue": c["pvalue"],
                    "pvalue_worse": c["pvalue_worse"],
                    "note": c["note"],
                }
            )
    out = _marked(rows)
    _check_table2(study, out)
    return out


def _check_table2(study: Study, table: pd.DataFrame) -> None:
    """Every ranker but ``bert`` on every cell; a change everywhere, inside ``[lo, hi]`` (where there is an
    interval); p-values in [0, 1] where defined; ``†`` only on a decrease and ``worse`` only on a rise."""
    name = "table2"
    problems = rows_expected(
        name, table, CELL_KEYS, study.expected_cells(rankers=[r for r in study.rankers if r != BASELINE])
    )
    if table.empty:
        raise_problems(problems)
        return
    problems += not_nan(name, table, ["change"], CELL_KEYS) + unc.compared_problems(name, table, CELL_KEYS)
    mark, change = table["mark"], table["change"]
    inside = (table["lo"] <= change + TOLERANCE) & (change <= table["hi"] + TOLERANCE)
    problems += rows_failing(
        name, table, inside | table["lo"].isna(), CELL_KEYS, "change inside [lo, hi]", ["lo", "change", "hi"]
    )
    problems += rows_failing(
        name,
        table,
        ~((mark == unc.IMPROVED) & (change >= 0)),
        CELL_KEYS,
        f"the mark {unc.IMPROVED} on a decrease only (change < 0)",
        ["mark", "change"],
    )
    problems += rows_failing(
        name,
        table,
        ~((mark == unc.WORSE) & (change <= 0)),
        CELL_KEYS,
        f"the mark {unc.WORSE!r} on a rise only (change > 0)",
        ["mark", "change"],
    )
    raise_problems(problems)


def _plain_ece(runs: list[Predictions], metric: str, seed: int) -> float:
    """Eq. 1's ECE of a cell (mean over seeds), on the balanced set for ``"ECE 1:1"``."""
    sets = [subset_negatives(p, 1, seed=seed) for p in runs] if metric == "ECE 1:1" else runs
    return float(np.mean([ece(p.probs, p.labels) for p in sets]))


def table2_wide(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 in the paper's layout, per condition and ranker: eq. 1's relative ECE change (the
    paper's number), then the debiased ECE's change with its interval and mark,
    ``-12.3% · -0.004 [-0.009, 0.001] †``."""
    t = t2.copy()
    t["test on"] = t["corpus"] + " · " + t["sampler"]
    t["cell"] = [
        (f"{rc:+.1%}" if np.isfinite(rc) else "n/a") + " · " + unc.format_difference(c, lo, hi, m)
        for rc, c, lo, hi, m in zip(t["rel_change"], t["change"], t["lo"], t["hi"], t["mark"])
    ]
    wide = t.pivot(index=["train_corpus", "ranker"], columns="test on", values="cell")
    rows = pd.MultiIndex.from_frame(t[["train_corpus", "ranker"]].drop_duplicates())
    return wide.reindex(index=rows, columns=list(dict.fromkeys(t["test on"])))


# ------------------------------------------------------------------------------ Figure 2
def ece_by_negatives(
    study: Study,
    split: str = "test",
    rankers: Iterable[str] | None = None,
    *,
    seed: int | None = None,
    n_resamples: int = 1000,
) -> pd.DataFrame:
    """Figure 2: ECE per number of non-relevant candidates per query, n = 1..k.

    One row per ranker x training corpus x condition x n: ``ECE`` (eq. 1), ``ECE debiased`` with
    its 95% interval (the figure's band), ``ECE bias`` and ``pairs``, on nested subsets
    (:func:`subset_negatives` with ``seed``, default the profile seed).
    """

    seed = study.cfg.seed if seed is None else seed
    rows = []
    for ranker, tc, cond in study.cells(split, rankers):
        pred = study.get(ranker, tc, cond)
        k = pred.labels.shape[1] - 1
        for n in range(1, k + 1):
            sub = subset_negatives(pred, n, seed=seed)
            est = interval(features(sub, "ECE debiased"), level=unc.LEVEL, n_resamples=n_resamples, seed=seed)
            rows.append(
                {
                    "ranker": ranker,
                    "train_corpus": tc,
                    "corpus": cond.corpus,
                    "sampler": cond.sampler,
                    "shift": study.shift(cond, tc),
                    "n_nonrel": n,
                    "ECE": ece(sub.probs, sub.labels),
                    "ECE debiased": est.value,
                    "ECE debiased lo": est.low,
                    "ECE debiased hi": est.high,
                    "ECE bias": est.bias,
                    "pairs": int(sub.labels.size),
                }
            )
    out = pd.DataFrame(rows)
    _check_figure2(study, out, split, rankers, seed)
    return out


def _check_figure2(study: Study, table: pd.DataFrame, split: str, rankers: Iterable[str] | None, seed: int) -> None:
    """Every cell at n = 1..k, ECE in [0, 1]; with the profile seed, ``bert``'s ends are the balanced
    (n = 1) and full (n = k) ECE of its main seed in :func:`metrics_table` (within :data:`TOLERANCE`)."""
    name, keys = "figure2", (*CELL_KEYS, "n_nonrel")
    problems = rows_expected(
        name, table, keys, [(*cell, n) for cell in study.expected_cells(split, rankers) for n in range(1, study.k + 1)]
    )
    problems += in_range(name, table, "ECE", keys, 0, 1)
    ends = table[(table["ranker"] == BASELINE) & table["n_nonrel"].isin([1, study.k])]
    for _, row in ends.iterrows() if seed == study.cfg.seed else ():
        cond = study.condition(row["corpus"], row["sampler"], split)
        column = "ECE 1:1" if row["n_nonrel"] == 1 else "ECE"
        want = _cell_metrics(study.get(BASELINE, row["train_corpus"], cond), study.cfg.seed)[column]
        if not abs(row["ECE"] - want) <= TOLERANCE:
            problems.append(
                f"{name}: {describe(row, keys)}: expected metrics' {column} of seed {study.main_seed} "
                f"({fmt(want)}, within {TOLERANCE:g}), found ECE {fmt(row['ECE'])}"
            )
    raise_problems(problems)


# ------------------------------------------------------------------------------ reliability
RELIABILITY_BINS = 10
"""Equal-width buckets of the reliability diagrams (the 10 buckets of Penha & Hauff's ECE, eq. 1)."""


def default_condition(study: Study, train_corpus: str | None = None, split: str = "test") -> Condition:
    """The in-distribution condition: the training corpus with the training sampler (else its first sampler)."""
    tc = train_corpus or study.train_corpora[0]
    samplers = [c.sampler for c in study.test_conditions(split) if c.corpus == tc]
    sampler = study.train_sampler if study.train_sampler in samplers else samplers[0]
    return study.condition(tc, sampler, split)


def reliability_table(
    study: Study,
    condition: Condition | None = None,
    train_corpus: str | None = None,
    *,
    n_bins: int = RELIABILITY_BINS,
    rankers: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Reliability-diagram buckets per ranker on one condition (default: in distribution, test).

    One row per ranker x bucket: ``bin``, ``lower``, ``upper``, ``mean_predicted``,
    ``fraction_positive`` (NaN for an empty bucket), ``count``, and the ranker's ``ECE`` on
    this condition (all candidates).
    """
    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        curve = reliability_curve(pred.probs, pred.labels, n_bins=n_bins)
        for i in range(n_bins):
            rows.append(
                {
                    "ranker": ranker,
                    "train_corpus": tc,
                    "condition": cond.name,
                    "bin": i,
                    "lower": float(curve.bin_edges[i]),
                    "upper": float(curve.bin_edges[i + 1]),
                    "mean_predicted": float(curve.mean_predicted[i]),
                    "fraction_positive": float(curve.fraction_positive[i]),
                    "count": int(curve.counts[i]),
                    "ECE": curve.ece,
                }
            )
    out = pd.DataFrame(rows)
    _check_reliability(out, list(rankers if rankers is not None else study.rankers), n_bins)
    return out


def _check_reliability(table: pd.DataFrame, rankers: list[str], n_bins: int) -> None:
    """``n_bins`` buckets per ranker, the same number of pairs for every ranker, fractions of relevant pairs in [0, 1]."""
    name = "reliability"
    problems = rows_expected(name, table, ("ranker", "bin"), [(r, b) for r in rankers for b in range(n_bins)])
    totals = table.groupby("ranker", sort=False)["count"].sum()
    if totals.nunique() > 1:
        problems.append(
            f"{name}: bucket counts sum to {', '.join(f'{r}: {n}' for r, n in totals.items())}, "
            "expected one total (the same pairs) for every ranker"
        )
    problems += in_range(name, table, "fraction_positive", ("ranker", "bin"), 0, 1, allow_nan=True)
    raise_problems(problems)


# ------------------------------------------------------------------------------ 2023 layout
def display_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without the numeric ``<metric> mean`` / ``<metric> sd`` columns that back its formatted ones."""
    return df.drop(columns=[c for c in df.columns if c.endswith((" mean", " sd", " lo", " hi"))])


def paper2023_sampler(study: Study) -> str:
    """The 2023 papers evaluated with 1 + 9 random negatives: ``random`` if the profile has it."""
    samplers = [s.value for s in study.cfg.negatives.eval]
    return "random" if "random" in samplers else study.train_sampler


PROTOCOL_2023 = (
    "PG-DRR / GPF-BERT trained on 1 positive + 9 random negatives per context with bert-base on MSDialog, "
    "MANtIS and UDC v1 (GPF-BERT's 'Ubuntu' is UDC v1, not UDC_DSTC8); their ± is an sd over 5 seeds (PG-DRR) "
    "or a standard error (GPF-BERT)"
)


def protocol_note(study: Study) -> str:
    """How this profile's rankers were trained, in the words a comparison with a paper needs."""
    cfg = study.cfg
    train = cfg.negatives.train.value
    k = cfg.negatives.train_k
    return (
        f"ours: trained on 1 positive + {k} {train} negative(s) per context, {cfg.training.backbone}, "
        f"{len(training_seeds(cfg))} training seed(s); [lo, hi] = 95% bootstrap interval over test queries"
        + (" and seeds" if len(training_seeds(cfg)) > 1 else "")
    )


def paper2023_tables(
    study: Study, intervals: pd.DataFrame, sampler: str | None = None, *, spread: pd.DataFrame | None = None
) -> dict[str, pd.DataFrame]:
    """PG-DRR / GPF-BERT layout: ``{"in-domain": ..., "shift": ...}``, one row per cell and ranker.

    ``R10@1``, ``MAP`` and ``ECE debiased`` as ``value [lo, hi]`` text beside ``ECE`` (eq. 1 on all
    candidates), ``ECE bias``, ``seeds``, ``seed spread`` (``bert``'s rows: R10@1 and ECE over the
    ensemble's members, :func:`seed_spread`, computed unless ``spread`` gives it; empty elsewhere),
    ``protocol`` and the numbers behind the text. ``sampler`` defaults to :func:`paper2023_sampler`;
    ``intervals``: :func:`interval_table` (with :func:`baseline_interval_table`'s rows if wanted).
    Layout: docs/decisions.md, "The 2023 papers' tables".
    """
    sampler = sampler or paper2023_sampler(study)
    spread = spread if spread is not None else seed_spread(study)
    summ = intervals[intervals["sampler"] == sampler].copy()
    rl = study.recall_label
    summ["train on"] = summ["train_corpus"]
    summ["test on"] = summ["corpus"]
    numbers = []
    for c, label in (("R@1", rl), ("MAP", "MAP"), ("ECE debiased", "ECE debiased")):
        summ[f"{c} mean"] = summ[c]  # the number, before ``label`` (the same name for MAP) holds its text
        summ[label] = [unc.format_interval(v, lo, hi) for v, lo, hi in zip(summ[c], summ[f"{c} lo"], summ[f"{c} hi"])]
        numbers += [f"{c} mean", f"{c} lo", f"{c} hi"]
    summ["ECE mean"] = summ["ECE"]
    summ["ECE"] = [f"{v:.3f}" if np.isfinite(v) else "" for v in summ["ECE mean"]]
    summ["ECE bias"] = [f"{v:.3f}" if np.isfinite(v) else "" for v in summ["ECE bias"]]
    numbers.append("ECE mean")
    summ["seed spread"] = _spread_note(summ, spread, rl)
    summ["protocol"] = protocol_note(study)
    cols = [
        "train on",
        "test on",
        "ranker",
        rl,
        "MAP",
        "ECE",
        "ECE debiased",
        "ECE bias",
        "seeds",
        "seed spread",
        "protocol",
        *numbers,
    ]
    in_dom = summ["train_corpus"] == summ["corpus"]
    out = {
        "in-domain": summ.loc[in_dom, cols].reset_index(drop=True),
        "shift": summ.loc[~in_dom, cols].reset_index(drop=True),
    }
    _check_paper2023(study, out["in-domain"], [*dict.fromkeys([*study.rankers, *intervals["ranker"]])])
    return out


def _spread_note(rows: pd.DataFrame, spread: pd.DataFrame, recall_label: str) -> list[str]:
    """``"R10@1 0.583–0.667, ECE 0.101–0.131 (3 seeds)"`` on ``bert``'s rows of ``rows`` (cell keys as
    :func:`interval_table`'s) from :func:`seed_spread`; ``""`` on the other rows and without a spread."""
    by_cell = {tuple(r[k] for k in ("train_corpus", "corpus", "sampler")): r for _, r in spread.iterrows()}
    out = []
    for _, row in rows.iterrows():
        s = by_cell.get((row["train_corpus"], row["corpus"], row["sampler"])) if row["ranker"] == BASELINE else None
        if s is None or not s[SEED_MODELS]:
            out.append("")
            continue
        out.append(
            f"{recall_label} {s['R@1 seed min']:.3f}–{s['R@1 seed max']:.3f}, "
            f"ECE {s['ECE seed min']:.3f}–{s['ECE seed max']:.3f} ({int(s[SEED_MODELS])} seeds)"
        )
    return out


def _check_paper2023(study: Study, table: pd.DataFrame, rankers: list[str]) -> None:
    """The in-domain table: one row per ranker of the profile (and rule of the intervals) and training corpus,
    with R@1, MAP and ECE."""
    name, keys = "paper2023 in-domain", ("ranker", "train on")
    problems = rows_expected(name, table, keys, [(r, tc) for r in rankers for tc in study.train_corpora])
    raise_problems(problems + not_nan(name, table, ("R@1 mean", "MAP mean", "ECE debiased mean", "ECE mean"), keys))
