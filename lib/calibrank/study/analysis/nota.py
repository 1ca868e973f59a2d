"""None-of-the-above (NOTA) prediction from a ranker's scores and uncertainties.

Penha & Hauff (EACL 2021, secs. 4 and 5.3, Tables 4-5): a random forest on the sorted means
(and variances) of the remaining ``K - 1`` candidates, stratified 5-fold macro-F1. Unlike the
paper's public code, no feature comes from the removed response: docs/decisions.md, "NOTA task".
"""

from __future__ import annotations

import dataclasses
import hashlib
import numbers
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from calibrank.metrics.stats import holm, mean_ci, paired_ttest, relative_change
from calibrank.predictions import Predictions, PredictionsError
from calibrank.study.analysis.subsets import keep_candidates

__all__ = [
    "FEATURE_SPACES",
    "NotaResult",
    "NotaSet",
    "compare_inputs",
    "cross_validate_nota",
    "make_nota_set",
    "nota_features",
]

FEATURE_SPACES = ("mean", "mean+var")


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    return int(seed)


def _digest(y: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(y, dtype=np.int8).tobytes()).hexdigest()[:16]


# ------------------------------------------------------------------------------ NOTA set
@dataclasses.dataclass(frozen=True, eq=False)
class NotaSet:
    """A NOTA task built from one ranker's Predictions.

    - ``pred``: the Predictions restricted to the ``K - 1`` remaining candidates of each query
      (candidates keep their original relative order; NOTA queries have all-zero labels);
    - ``y [Q]``: 1 = NOTA (the relevant candidate was removed), 0 = answerable;
    - ``removed [Q]``: the original index (0..K-1) of the removed candidate;
    - ``seed``, ``fraction``: how it was drawn.
    """

    pred: Predictions
    y: np.ndarray
    removed: np.ndarray
    seed: int
    fraction: float

    @property
    def n_queries(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_candidates(self) -> int:
        """Candidates per query after removal (``K - 1``)."""
        return int(self.pred.labels.shape[1])

    def apply(self, other: Predictions) -> NotaSet:
        """The same removal applied to another ranker's Predictions on the same queries and labels.

        Use it to pair, e.g., the ensemble's variances with MC Dropout's means (``+var[R^E]``).
        """
        if not isinstance(other, Predictions):
            raise TypeError(f"other must be a calibrank Predictions; got {type(other).__name__}")
        k = self.n_candidates + 1
        where = other.meta.get("name", "other")
        if other.labels.shape != (self.n_queries, k):
            raise PredictionsError(
                f"{where} has shape {other.labels.shape}; this NOTA set was built from shape {(self.n_queries, k)}"
            )
        if not np.array_equal(other.qids, self.pred.qids):
            raise PredictionsError(f"{where} covers different qids (or a different order) than this NOTA set")
        keep = _keep_mask(self.n_queries, k, self.removed)
        sub = keep_candidates(other, keep, {"nota": self.pred.meta.get("nota", {})})
        if not np.array_equal(sub.labels, self.pred.labels):
            raise PredictionsError(f"{where} disagrees with this NOTA set on the labels")
        return dataclasses.replace(self, pred=sub)


def _keep_mask(q: int, k: int, removed: np.ndarray) -> np.ndarray:
    keep = np.ones((q, k), dtype=bool)
    keep[np.arange(q), removed] = False
    return keep


def make_nota_set(pred: Predictions, *, seed: int, fraction: float = 0.5) -> NotaSet:
    """Remove the relevant candidate of ``round(fraction * Q)`` queries (NOTA) and one negative elsewhere.

    Both draws come from ``numpy.random.default_rng(seed)``. Every query needs exactly one
    relevant candidate and at least 2 candidates.
    """
    if not isinstance(pred, Predictions):
        raise TypeError(f"pred must be a calibrank Predictions; got {type(pred).__name__}")
    seed = _check_seed(seed)
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0.0 <= float(fraction) <= 1.0:
        raise ValueError(f"fraction must be a number in [0, 1]; got {fraction!r}")
    fraction = float(fraction)
    where = pred.meta.get("name", "pred")
    q, k = pred.labels.shape
    if q == 0:
        raise PredictionsError(f"{where}: no queries")
    if k < 2:
        raise PredictionsError(f"{where}: NOTA needs at least 2 candidates per query; got K = {k}")
    n_rel = pred.labels.sum(axis=1)
    if (n_rel == 0).any():
        bad = pred.qids[n_rel == 0]
        raise PredictionsError(
            f"{where}: {bad.size} query(ies) have no relevant candidate (e.g. {bad[0]!r}); "
            "NOTA needs exactly one relevant candidate per query"
        )
    if (n_rel > 1).any():
        bad = pred.qids[n_rel > 1]
        raise PredictionsError(
            f"{where}: {bad.size} query(ies) have more than one relevant candidate (e.g. {bad[0]!r}); "
            "NOTA needs exactly one relevant candidate per query"
        )
    rng = np.random.default_rng(seed)
    n_nota = int(np.floor(fraction * q + 0.5))
    y = np.zeros(q, dtype=np.int8)
    y[rng.permutation(q)[:n_nota]] = 1
    relevant = np.argmax(pred.labels, axis=1)
    # A uniform random negative per query: argmax of uniform keys over the negatives.
    keys = rng.random((q, k))
    keys[pred.labels.astype(bool)] = -1.0
    negative = np.argmax(keys, axis=1)
    removed = np.where(y == 1, relevant, negative).astype(np.int64)
    info = {"nota": {"seed": seed, "fraction": fraction, "n_nota": n_nota, "source_K": k}}
    sub = keep_candidates(pred, _keep_mask(q, k, removed), info)
    return NotaSet(pred=sub, y=y, removed=removed, seed=seed, fraction=fraction)


# ------------------------------------------------------------------------------ features
def nota_features(nota_set: NotaSet, space: str = "mean", *, var_from: NotaSet | None = None) -> np.ndarray:
    """Features ``X [Q, F]`` of a NOTA set, from its remaining ``K - 1`` candidates only.

    ``space="mean"``: mean probabilities sorted descending (``F = K - 1``); ``"mean+var"``: then
    their variances in the same order. ``var_from``: variances from another ranker's set built by
    ``nota_set.apply(...)`` (the paper's ``+var[R^E]``).
    """
    if not isinstance(nota_set, NotaSet):
        raise TypeError(f"nota_set must be a NotaSet; got {type(nota_set).__name__}")
    if space not in FEATURE_SPACES:
        raise ValueError(f"space must be one of {FEATURE_SPACES}; got {space!r}")
    if var_from is not None and space != "mean+var":
        raise ValueError("var_from only makes sense with space='mean+var'")
    mean = nota_set.pred.mean
    order = np.argsort(-mean, axis=1, kind="stable")
    x_mean = np.take_along_axis(mean, order, axis=1)
    if space == "mean":
        return x_mean
    source = nota_set
    if var_from is not None:
        if not isinstance(var_from, NotaSet):
            raise TypeError(f"var_from must be a NotaSet; got {type(var_from).__name__}")
        if (
            var_from.pred.labels.shape != nota_set.pred.labels.shape
            or not np.array_equal(var_from.pred.qids, nota_set.pred.qids)
            or not np.array_equal(var_from.removed, nota_set.removed)
            or not np.array_equal(var_from.y, nota_set.y)
        ):
            raise ValueError(
                "var_from must be the same NOTA set (same queries, removed candidates and labels) for "
                "another ranker: build it with nota_set.apply(other_predictions)"
            )
        source = var_from
    x_var = np.take_along_axis(source.pred.var, order, axis=1)
    return np.concatenate([x_mean, x_var], axis=1)


# ------------------------------------------------------------------------------ classifier
@dataclasses.dataclass(frozen=True, eq=False)
class NotaResult:
    """Macro-F1 of one input space per cross-validation fold.

    ``seed``, ``n`` (examples) and ``labels_digest`` identify the folds; :func:`compare_inputs`
    checks that the results it pairs agree on those that are set. ``oof_pred`` holds the
    out-of-fold predictions when available.
    """

    fold_scores: np.ndarray
    seed: int | None = None
    n: int | None = None
    labels_digest: str | None = None
    oof_pred: np.ndarray | None = None

    def __post_init__(self) -> None:
        scores = np.asarray(self.fold_scores, dtype=np.float64)
        if scores.ndim != 1 or scores.size == 0 or not np.isfinite(scores).all():
            raise ValueError(f"fold_scores must be a non-empty 1-D array of finite numbers; got {self.fold_scores!r}")
        object.__setattr__(self, "fold_scores", scores)

    @property
    def folds(self) -> int:
        return int(self.fold_scores.size)

    @property
    def mean(self) -> float:
        return float(self.fold_scores.mean())

    @property
    def sd(self) -> float:
        """Sample standard deviation over folds (``ddof=1``); NaN with a single fold."""
        return float(self.fold_scores.std(ddof=1)) if self.folds > 1 else float("nan")


def cross_validate_nota(
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    folds: int = 5,
    n_estimators: int = 100,
    n_jobs: int | None = 1,
) -> NotaResult:
    """Stratified ``folds``-fold cross-validation of a random forest; macro-F1 per fold.

    Forest and folds are seeded by ``seed``, so every input space gets the same folds and per-fold
    scores can be paired. Each class needs at least ``folds`` examples.
    """
    seed = _check_seed(seed)
    for name, v in (("folds", folds), ("n_estimators", n_estimators)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < (2 if name == "folds" else 1):
            raise ValueError(f"{name} must be an integer >= {2 if name == 'folds' else 1}; got {v!r}")
    x = np.asarray(X)
    t = np.asarray(y)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"X must be a 2-D array [examples, features]; got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise ValueError(f"X must be real numbers; got dtype {x.dtype}")
    x = x.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"X contains {int((~np.isfinite(x)).sum())} NaN/infinite value(s)")
    if t.ndim != 1 or t.shape[0] != x.shape[0]:
        raise ValueError(f"y must be 1-D with one label per row of X ({x.shape[0]}); got shape {t.shape}")
    if not np.isin(t, (0, 1)).all():
        raise ValueError("y must contain only 0 (answerable) and 1 (NOTA)")
    t = t.astype(np.int8)
    counts = np.bincount(t, minlength=2)
    if counts.min() < folds:
        raise ValueError(
            f"each class needs at least folds={folds} examples; got {counts[0]} answerable, {counts[1]} NOTA"
        )
    cv = StratifiedKFold(n_splits=int(folds), shuffle=True, random_state=seed)
    scores = []
    oof = np.full(t.shape, -1, dtype=np.int8)
    for train, test in cv.split(x, t):
        clf = RandomForestClassifier(n_estimators=int(n_estimators), random_state=seed, n_jobs=n_jobs)
        clf.fit(x[train], t[train])
        pred = clf.predict(x[test])
        oof[test] = pred
        scores.append(f1_score(t[test], pred, average="macro", labels=[0, 1], zero_division=0.0))
    return NotaResult(np.array(scores), seed=seed, n=int(t.size), labels_digest=_digest(t), oof_pred=oof)


def compare_inputs(results: dict[str, NotaResult], base: str = "E[R]", *, alpha: float = 0.05) -> pd.DataFrame:
    """One row per input space (``base`` first): macro-F1 mean, sd and 95% interval over folds, change over ``base``.

    Non-base rows: one-sided paired t-test over folds (``pvalue``, ``pvalue_worse``), Holm across
    spaces, ``significant``, NaN and a ``note`` when untestable; results from different folds are a
    ValueError. The t-test over shared folds is optimistic (Dietterich 1998), as in the paper.
    """
    if not isinstance(results, dict) or not results:
        raise ValueError("results must be a non-empty dict {input space: NotaResult}")
    for name, r in results.items():
        if not isinstance(r, NotaResult):
            raise TypeError(f"results[{name!r}] must be a NotaResult; got {type(r).__name__}")
    if base not in results:
        raise ValueError(f"base {base!r} is not among the results {list(results)}")
    if not (isinstance(alpha, numbers.Real) and 0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be strictly between 0 and 1; got {alpha!r}")
    ref = results[base]
    for name, r in results.items():
        if r.folds != ref.folds:
            raise ValueError(f"{name!r} has {r.folds} folds but base {base!r} has {ref.folds}: cannot pair folds")
        for attr in ("seed", "n", "labels_digest"):
            a, b = getattr(r, attr), getattr(ref, attr)
            if a is not None and b is not None and a != b:
                raise ValueError(f"{name!r} and base {base!r} differ in {attr} ({a!r} vs {b!r}): not the same folds")
    names = [base] + [n for n in results if n != base]
    rows = []
    for name in names:
        r = results[name]
        _, lo, hi = mean_ci(r.fold_scores)
        row = {
            "input": name,
            "f1_mean": r.mean,
            "f1_sd": r.sd,
            "f1_lo": lo,
            "f1_hi": hi,
            "folds": r.folds,
            "rel_change": relative_change(r.mean, ref.mean),
            "statistic": float("nan"),
            "pvalue": float("nan"),
            "pvalue_worse": float("nan"),
            "note": "base",
        }
        if name != base:
            test = paired_ttest(r.fold_scores, ref.fold_scores, alternative="greater")
            worse = paired_ttest(r.fold_scores, ref.fold_scores, alternative="less")
            row.update(statistic=test.statistic, pvalue=test.pvalue, pvalue_worse=worse.pvalue, note=test.note)
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("pvalue", "pvalue_worse"):
        adjusted = np.full(len(df), np.nan)
        if len(df) > 1:
            adjusted[1:] = holm(df[col].to_numpy()[1:])
        df[f"{col}_holm"] = adjusted
    df["significant"] = np.nan_to_num(df["pvalue_holm"].to_numpy(), nan=1.0) < alpha
    return df[
        [
            "input",
            "f1_mean",
            "f1_sd",
            "f1_lo",
            "f1_hi",
            "folds",
            "rel_change",
            "statistic",
            "pvalue",
            "pvalue_worse",
            "pvalue_holm",
            "pvalue_worse_holm",
            "significant",
            "note",
        ]
    ]
