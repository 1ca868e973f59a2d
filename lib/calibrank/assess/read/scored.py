"""A ranker's scores as the user gave them: ragged lists, graded qrels, several samples.

``ScoredRun`` holds raw scores before they are read as probabilities: lists padded with a mask,
unjudged candidates non-relevant but remembered, several runs of one ranker as samples
``scores [S, Q, K]``. :class:`ScoreKind` says how a score becomes a probability: ``probability``
as is, ``logit`` through the sigmoid, ``score`` (any scale) only through a map fitted on labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from scipy.special import expit

from calibrank.assess.errors import AssessError
from calibrank.predictions import Predictions

__all__ = ["ScoreKind", "ScoredRun", "AssessError", "TIES", "plain"]

TIES = ("pessimistic", "trec_eval")


class ScoreKind(str, Enum):
    probability = "probability"
    logit = "logit"
    score = "score"


def plain(value: Any) -> Any:
    """``value`` with a numpy scalar as its Python one, so that a message shows ``3`` or ``'q1'``, not ``np.int64(3)``."""
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class ScoredRun:
    """One ranker's raw scores on Q queries, each with its own list of candidates, and their judgments.

    What every reader returns and every analysis reads: ragged lists padded with a mask, the
    qrels joined (unjudged candidates non-relevant but remembered), several runs of one ranker
    as samples. Arrays are checked and copied on construction.

    - ``qids [Q]``; ``docids [Q, K]`` ('' where padded); ``mask [Q, K]`` True for a candidate;
    - ``scores [S, Q, K]``: S samples of the raw score (0 where padded);
    - ``relevance [Q, K]``: graded relevance from the qrels (0 for unjudged or padded);
    - ``judged [Q, K]``: the qrels judge the candidate;
    - ``n_relevant [Q]``: relevant documents the qrels hold for the query, retrieved or not
      (the denominator of recall and average precision, as trec_eval counts it);
    - ``kind``: what a score is; ``relevant_at``: the lowest grade that counts as relevant;
    - ``grades [Q, M]`` or None: the positive grades of every document the qrels judge for the
      query, retrieved or not, in decreasing order (0-padded): nDCG's ideal ranking, as
      trec_eval's; None: the candidates' grades and ``relevant_at`` for each relevant one missing;
    - ``ties``: how candidates of equal score rank: ``"trec_eval"`` by docid, the greater first
      (trec_eval's order, for a user's runs); ``"pessimistic"`` the relevant after the others.

    Parameters
    ----------
    qids : array-like of shape (Q,)
        Query ids (read as strings).
    docids : array-like of shape (Q, K)
        Candidate ids ('' where padded).
    mask : array-like of bool, shape (Q, K)
        True for a candidate.
    scores : array-like of float, shape (S, Q, K)
        S samples of the raw score.
    relevance : array-like of int, shape (Q, K)
        Graded relevance (0 for unjudged).
    judged : array-like of bool, shape (Q, K)
        The qrels judge the candidate.
    n_relevant : array-like of int, shape (Q,)
        Relevant documents in the qrels, retrieved or not.
    kind : ScoreKind or str, default="score"
        What a score is: ``probability``, ``logit`` or ``score`` (any scale).
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    source : str, default="run"
        Where the scores came from, for messages.
    meta : dict, default={}
        What the reader knows besides (ranker, format, dropped queries).
    grades : array-like of int, shape (Q, M), default=None
        Every positive grade of each query's judged documents (nDCG's ideal ranking).
    ties : {"pessimistic", "trec_eval"}, default="pessimistic"
        How equal scores rank.

    Examples
    --------
    >>> import numpy as np
    >>> run = ScoredRun(qids=["q1", "q2"], docids=[["d1", "d2"], ["d3", ""]], mask=[[True, True], [True, False]],
    ...                 scores=[[[2.0, -1.0], [0.5, 0.0]]], relevance=[[1, 0], [0, 0]],
    ...                 judged=[[True, True], [True, False]], n_relevant=[1, 0], kind="logit")
    >>> run.n_samples, run.labels.tolist(), run.answerable.tolist()
    (1, [[1, 0], [0, 0]], [True, False])
    >>> run.probabilities()[0].round(3).tolist()
    [[0.881, 0.269], [0.622, 0.0]]
    """

    qids: np.ndarray
    docids: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    relevance: np.ndarray
    judged: np.ndarray
    n_relevant: np.ndarray
    kind: ScoreKind = ScoreKind.score
    relevant_at: int = 1
    source: str = "run"
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    grades: np.ndarray | None = None
    ties: str = "pessimistic"

    def __post_init__(self) -> None:
        kind = ScoreKind(self.kind)
        qids = np.asarray(self.qids).astype(str)
        mask = np.asarray(self.mask, dtype=bool)
        scores = np.asarray(self.scores, dtype=np.float64)
        q = qids.shape[0]
        if mask.ndim != 2 or mask.shape[0] != q:
            raise AssessError(f"{self.source}: mask must be [Q={q}, K], got {mask.shape}")
        if scores.ndim != 3 or scores.shape[1:] != mask.shape or scores.shape[0] < 1:
            raise AssessError(f"{self.source}: scores must be [S>=1, {q}, {mask.shape[1]}], got {scores.shape}")
        for name in ("docids", "relevance", "judged"):
            if np.shape(getattr(self, name)) != mask.shape:
                raise AssessError(
                    f"{self.source}: {name} must have shape {mask.shape}, got {np.shape(getattr(self, name))}"
                )
        if np.shape(self.n_relevant) != (q,):
            raise AssessError(f"{self.source}: n_relevant must have shape ({q},), got {np.shape(self.n_relevant)}")
        full = bool(mask.all())  # no padding: the checks and copies below skip the masking
        given = scores if full else scores[:, mask]
        if not np.isfinite(given).all():
            raise AssessError(f"{self.source}: scores must be finite")
        if kind is ScoreKind.probability and ((given < 0) | (given > 1)).any():
            bad = given[(given < 0) | (given > 1)]
            raise AssessError(
                f"{self.source}: {bad.size} scores lie outside [0, 1] (first: {float(bad[0])!r}), which "
                "score kind 'probability' expects; use score kind 'logit' (sigmoid of the score) or 'score' "
                "(any scale)"
            )
        if not mask.any(axis=1).all():
            raise AssessError(f"{self.source}: every query needs at least one candidate")
        if int(self.relevant_at) < 1:
            raise AssessError(f"relevant_at: expected an integer >= 1, got {plain(self.relevant_at)!r}")
        if self.ties not in TIES:
            raise AssessError(f"ties: expected one of {', '.join(TIES)}, got {self.ties!r}")
        if self.grades is not None:
            grades = np.asarray(self.grades)
            if grades.ndim != 2 or grades.shape[0] != q or grades.dtype.kind not in "iu" or (grades < 0).any():
                raise AssessError(
                    f"{self.source}: grades must be non-negative integers of shape [Q={q}, M], "
                    f"got {grades.dtype} {grades.shape}"
                )
            grades = -np.sort(-grades.astype(np.int64), axis=1)
            counted = (grades >= int(self.relevant_at)).sum(axis=1)
            if (counted != np.asarray(self.n_relevant)).any():
                i = int(np.flatnonzero(counted != np.asarray(self.n_relevant))[0])
                raise AssessError(
                    f"{self.source}: query {qids[i]} has {int(counted[i])} grades >= {int(self.relevant_at)} "
                    f"but n_relevant = {int(np.asarray(self.n_relevant)[i])}; expected the same count"
                )
            object.__setattr__(self, "grades", grades)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "qids", qids)
        object.__setattr__(self, "mask", mask)
        docids = np.asarray(self.docids)
        docids = docids if docids.dtype.kind == "U" else docids.astype(str)
        relevance = np.asarray(self.relevance, dtype=np.int64)
        object.__setattr__(self, "scores", scores.copy() if full else np.where(mask[None], scores, 0.0))
        object.__setattr__(self, "docids", docids.copy() if full else np.where(mask, docids, ""))
        object.__setattr__(self, "relevance", relevance.copy() if full else np.where(mask, relevance, 0))
        object.__setattr__(self, "judged", np.asarray(self.judged, dtype=bool) & mask)
        object.__setattr__(self, "n_relevant", np.asarray(self.n_relevant, dtype=np.int64))

    @property
    def labels(self) -> np.ndarray:
        """[Q, K] 0/1: the candidate's grade reaches ``relevant_at`` (unjudged count as 0)."""
        return ((self.relevance >= self.relevant_at) & self.mask).astype(np.int8)

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def judged_fraction(self) -> float:
        """Share of the candidates that the qrels judge."""
        return float(self.judged.sum() / self.mask.sum())

    @property
    def answerable(self) -> np.ndarray:
        """[Q] the query has at least one relevant candidate in its list."""
        return np.asarray(self.labels.any(axis=1))

    def subset(self, rows: np.ndarray) -> ScoredRun:
        """The queries at ``rows`` (indices or a boolean mask), in that order."""
        rows = np.asarray(rows)
        return ScoredRun(
            self.qids[rows],
            self.docids[rows],
            self.mask[rows],
            self.scores[:, rows],
            self.relevance[rows],
            self.judged[rows],
            self.n_relevant[rows],
            self.kind,
            self.relevant_at,
            self.source,
            dict(self.meta),
            grades=None if self.grades is None else self.grades[rows],
            ties=self.ties,
        )

    def probabilities(self) -> np.ndarray:
        """[S, Q, K] the samples as probabilities; an error for ``score``, which has none until fitted."""
        if self.kind is ScoreKind.probability:
            return self.scores
        if self.kind is ScoreKind.logit:
            return np.where(self.mask[None], expit(self.scores), 0.0)
        raise AssessError(
            f"{self.source}: score kind 'score' has no probabilities as given; fit a recalibrator on validation first"
        )

    def to_predictions(self, samples: np.ndarray | None = None, **meta: Any) -> Predictions:
        """Predictions of these queries from probability ``samples [S, Q, K]`` (default: the scores as given)."""
        samples = self.probabilities() if samples is None else np.where(self.mask[None], samples, 0.0)
        return Predictions(
            self.qids,
            self.labels,
            samples.mean(axis=0),
            samples,
            meta={"name": self.source, "ranker": self.meta.get("ranker", self.source), **meta},
            mask=None if self.mask.all() else self.mask,
            docids=self.docids,
        )
