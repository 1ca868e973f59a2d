"""Where a post-hoc method (a recalibrator, a conformal quantile) is fitted, and on what it is evaluated.

Rankers with S > 1 are fitted on the validation split of the training condition; rankers with
S = 1 (no validation Predictions) on a seeded half of the in-distribution test queries, removed
from every test condition of that corpus. Tables say which (``fitted_on``). Why:
docs/decisions.md, "Where post-hoc methods are fitted".
"""

from __future__ import annotations

import dataclasses

import numpy as np

from calibrank.predictions import Predictions

__all__ = ["FitData", "VALIDATION", "TEST_HALF", "fit_data", "drop_queries"]

VALIDATION = "validation (training condition)"
TEST_HALF = "half of in-distribution test queries (seeded; evaluated on the other half)"


@dataclasses.dataclass(frozen=True, eq=False)
class FitData:
    """The Predictions a method is fitted on, the query ids it must not be evaluated on, and which rule gave them."""

    pred: Predictions
    exclude: frozenset[str]
    fitted_on: str

    def __post_init__(self):
        """One of the two rules, and under either no fitting query is evaluated: validation queries are not
        test queries (nothing to exclude); a half of test is excluded from every test condition."""
        expected = {VALIDATION: frozenset(), TEST_HALF: frozenset(self.pred.qids.tolist())}
        if self.fitted_on not in expected:
            raise ValueError(f"fitted_on must be one of {list(expected)}; got {self.fitted_on!r}")
        if self.exclude != expected[self.fitted_on]:
            raise ValueError(
                f"fitted on {self.fitted_on!r}: expected to exclude "
                f"{'nothing' if self.fitted_on == VALIDATION else 'exactly the fitting queries'} "
                f"from evaluation, found {len(self.exclude)} excluded query ids"
            )


def drop_queries(pred: Predictions, exclude: frozenset[str] | set[str]) -> Predictions:
    """``pred`` without the queries whose id is in ``exclude`` (``pred`` itself when none is)."""
    if not exclude:
        return pred
    keep = ~np.isin(pred.qids, np.array(sorted(exclude), dtype=str))
    if not keep.any():
        raise ValueError(
            f"{pred.meta.get('name', 'predictions')}: every query is excluded; nothing left to evaluate on"
        )
    return _rows(pred, keep, dict(pred.meta))


def _rows(pred: Predictions, rows: np.ndarray, meta: dict) -> Predictions:
    """The queries at ``rows`` of ``pred``, with their mask and candidate ids."""
    return Predictions(
        pred.qids[rows],
        pred.labels[rows],
        pred.probs[rows],
        pred.samples[:, rows],
        meta=meta,
        mask=None if pred.mask is None else pred.mask[rows],
        docids=None if pred.docids is None else pred.docids[rows],
    )


def _split_half(pred: Predictions, seed: int) -> tuple[Predictions, frozenset[str]]:
    q = pred.labels.shape[0]
    if q < 2:
        raise ValueError(f"{pred.meta.get('name', 'predictions')}: {q} test query; a held-out half needs at least 2")
    order = np.random.default_rng(seed).permutation(q)
    fit_rows = np.sort(order[: q // 2])
    fit = _rows(pred, fit_rows, {**pred.meta, "fit_half": {"seed": int(seed), "queries": int(fit_rows.size)}})
    return fit, frozenset(fit.qids.tolist())


def fit_data(study, ranker: str, train_corpus: str, *, seed: int | None = None) -> FitData:
    """The fitting data of ``ranker`` trained on ``train_corpus`` (main training seed), by the rule above."""
    seed = study.cfg.seed if seed is None else seed
    try:
        valid = study.condition(train_corpus, study.train_sampler, "valid")
    except KeyError:
        valid = None
    if valid is not None and (ranker, train_corpus, valid.name) in study.paths:
        return FitData(study.get(ranker, train_corpus, valid), frozenset(), VALIDATION)
    test = study.condition(train_corpus, study.train_sampler, "test")
    fit, exclude = _split_half(study.get(ranker, train_corpus, test), seed)
    return FitData(fit, exclude, TEST_HALF)
