"""Rules that learn nothing: what a trained ranker must beat before its scores mean anything.

``random``, ``bm25`` (Lucene's BM25 of the candidate against the context; Robertson & Zaragoza
2009, eq. 3.11), ``least_overlap`` (BM25 negated) and ``biencoder`` (zero-shot MiniLM cosine),
ties broken with a seed; probabilities by Platt scaling on the training condition's validation
split (:func:`platt_fit`). :func:`baseline_predictions` returns
:class:`~calibrank.predictions.Predictions` (S = 1). Details: docs/decisions.md, "Rules that learn nothing".
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from calibrank.metrics.calibration import ece
from calibrank.metrics.ranking import recall_at_k
from calibrank.predictions import Predictions
from calibrank.study.data.conditions import Condition, eval_conditions
from calibrank.study.data.negatives import encode, load_embedding_model, query_text
from calibrank.study.data.negatives import words as _words
from calibrank.study.data.querysets import MissingStepError, load_pool, load_query_set
from calibrank.study.data.schema import RankingQuery
from calibrank.study.paths import run_dir
from calibrank.table_checks import raise_problems, rows_expected, rows_failing

__all__ = [
    "BaselineName",
    "DISPLAY_NAMES",
    "BM25Stats",
    "bm25_overlap",
    "baseline_scores",
    "biencoder_similarity",
    "platt_fit",
    "platt_apply",
    "baseline_predictions",
]

_TIE_SCALE = 1e-9  # far below any score difference a rule makes; only orders exact ties


class BaselineName(str, enum.Enum):
    random = "random"
    bm25 = "bm25"
    least_overlap = "least_overlap"
    biencoder = "biencoder"


DISPLAY_NAMES = {
    BaselineName.random.value: "random",
    BaselineName.bm25.value: "BM25 (most overlap)",
    BaselineName.least_overlap.value: "least overlap",
    BaselineName.biencoder.value: "bi-encoder (zero-shot)",
}


class BM25Stats:
    """Document frequencies and mean length of a response pool, and BM25 of a text against a query.

    ``k1`` and ``b`` default to the profile's BM25 sampler values (1.5, 0.75).
    """

    def __init__(self, pool: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        docs = [set(_words(t)) for t in pool]
        if not docs:
            raise ValueError("BM25Stats: the response pool is empty")
        self.n = len(docs)
        self.df = Counter(t for d in docs for t in d)
        self.avgdl = float(np.mean([len(_words(t)) for t in pool])) or 1.0
        self.k1, self.b = float(k1), float(b)

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return float(np.log1p((self.n - df + 0.5) / (df + 0.5)))

    def score(self, query: str, doc: str) -> float:
        tf = Counter(_words(doc))
        dl = sum(tf.values())
        norm = self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)
        # the query's distinct terms in their order of first occurrence, not a set's: a set of strings
        # iterates in an order that changes with each process's hash seed, and so would the float sum
        return float(sum(self.idf(t) * tf[t] / (tf[t] + norm) for t in dict.fromkeys(_words(query)) if t in tf))


def bm25_overlap(queries: Sequence[RankingQuery], stats: BM25Stats) -> np.ndarray:
    """``[Q, K]`` BM25 of each candidate against its query's context (all utterances)."""
    return np.array([[stats.score(" ".join(q.context), c) for c in q.candidates] for q in queries], dtype=np.float64)


def biencoder_similarity(
    query_sets: Sequence[Sequence[RankingQuery]],
    model: str = "all-MiniLM-L6-v2",
    precision: str = "fp32",
    batch_size: int = 128,
) -> list[np.ndarray]:
    """``[Q, K]`` zero-shot cosine of each candidate with its context (newest utterance first), one per query set.

    Every distinct text is encoded once across the sets and across both roles: the samplers of a split
    share its contexts and true responses, and a context can be another query's candidate.
    """
    for i, qs in enumerate(query_sets):
        if len({len(q.candidates) for q in qs}) != 1:
            raise ValueError(
                f"biencoder_similarity: query set {i} needs queries with one number of candidates, got "
                f"{sorted({len(q.candidates) for q in qs}) or 'no query'}"
            )
    enc = load_embedding_model(model)
    contexts = [[query_text(q.context, newest_first=True) for q in qs] for qs in query_sets]
    texts = list(
        dict.fromkeys(
            [*(c for cs in contexts for c in cs), *(c for qs in query_sets for q in qs for c in q.candidates)]
        )
    )
    emb = encode(enc, texts, batch_size=batch_size, precision=precision)
    where = {t: i for i, t in enumerate(texts)}
    out = []
    for qs, cs in zip(query_sets, contexts):
        rows = np.array([[where[c] for c in q.candidates] for q in qs], dtype=np.int64).reshape(len(qs), -1)
        out.append(np.einsum("qkd,qd->qk", emb[rows], emb[[where[c] for c in cs]]).astype(np.float64))
    return out


def baseline_scores(
    name: str | BaselineName,
    queries: Sequence[RankingQuery],
    *,
    seed: int,
    stats: BM25Stats | None = None,
    similarity: np.ndarray | None = None,
    overlap: np.ndarray | None = None,
    model: str = "all-MiniLM-L6-v2",
    precision: str = "fp32",
    batch_size: int = 128,
) -> np.ndarray:
    """``[Q, K]`` scores of a rule (higher = ranked higher), exact ties broken with ``seed``.

    ``stats`` (the split's :class:`BM25Stats`) is needed by ``bm25`` and ``least_overlap`` unless their
    :func:`bm25_overlap` is given as ``overlap`` (the two rules share it); ``biencoder`` takes its
    :func:`biencoder_similarity` as ``similarity`` when that was computed for several sets at once.
    """
    name = BaselineName(name)
    queries = list(queries)
    k = {len(q.candidates) for q in queries}
    if len(k) != 1:
        raise ValueError(f"baseline {name.value}: every query needs the same number of candidates, got {sorted(k)}")
    shape = (len(queries), k.pop())
    tie = np.random.default_rng(seed).random(shape) * _TIE_SCALE
    if name is BaselineName.random:
        return tie / _TIE_SCALE
    if name is BaselineName.biencoder:
        if similarity is None:
            similarity = biencoder_similarity([queries], model, precision, batch_size)[0]
        if similarity.shape != shape:
            raise ValueError(f"baseline biencoder: similarity has shape {similarity.shape}, the queries {shape}")
        return similarity + tie
    if overlap is None:
        if stats is None:
            raise ValueError(f"baseline {name.value} needs the BM25 statistics of the split's response pool (stats=)")
        overlap = bm25_overlap(queries, stats)
    if overlap.shape != shape:
        raise ValueError(f"baseline {name.value}: overlap has shape {overlap.shape}, the queries {shape}")
    return (overlap if name is BaselineName.bm25 else -overlap) + tie


def platt_fit(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(a, b)`` of P(relevant) = sigmoid(a * score + b), by maximum likelihood (Platt 1999).

    Scores without spread, or whose fit gives ``a < 0``, get ``a = 0`` and the logit of the base
    rate: calibration must not turn a rule into its opposite.
    """

    x = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    y = np.asarray(labels).reshape(-1).astype(int)
    if len(set(y.tolist())) < 2:
        raise ValueError("platt_fit: the labels must contain both 0 and 1")
    mu, sd = float(x.mean()), float(x.std())
    if sd < 1e-6:
        rate = float(y.mean())
        return 0.0, float(np.log(rate / (1.0 - rate)))
    lr = LogisticRegression(C=np.inf, solver="lbfgs").fit((x - mu) / sd, y)
    a = float(lr.coef_[0, 0]) / sd
    if a <= 0:  # the rule ranks against relevance here: the map may not reverse it, only flatten it
        rate = float(y.mean())
        return 0.0, float(np.log(rate / (1.0 - rate)))
    return a, float(lr.intercept_[0]) - a * mu


def platt_apply(scores: np.ndarray, ab: tuple[float, float]) -> np.ndarray:
    return expit(ab[0] * np.asarray(scores, dtype=np.float64) + ab[1])


def baseline_predictions(
    name: str | BaselineName,
    queries: Sequence[RankingQuery],
    scores: np.ndarray,
    ab: tuple[float, float],
    meta: dict | None = None,
) -> Predictions:
    """Predictions (S = 1) of a rule: its Platt-scaled scores; the raw scores rank (ties already broken)."""
    name = BaselineName(name)
    probs = platt_apply(scores, ab)
    # Platt scaling is monotone, but it can squash distinct scores onto one float: rank by the
    # raw scores by adding an order-preserving infinitesimal where the probabilities tie.
    order = np.argsort(np.argsort(scores, axis=1), axis=1)
    probs = np.clip(probs + order * 1e-12, 0.0, 1.0)
    return Predictions(
        qids=np.array([q.qid for q in queries]),
        labels=np.array([q.labels for q in queries], dtype=np.int8),
        probs=probs,
        samples=probs[None],
        meta={"ranker": f"baseline:{name.value}", "baseline": name.value, "platt": list(ab), **(meta or {})},
    )


# ------------------------------------------------------------------ the profile's baselines
def baselines_path(cfg, name: str | BaselineName, train_corpus: str, condition) -> Path:
    """``runs/<profile>/baselines/<name>/<train corpus>/<condition>.npz`` (Platt fitted for that training corpus)."""

    return run_dir(cfg.profile, "baselines", BaselineName(name).value, str(train_corpus)) / f"{condition.name}.npz"


def compute_baselines(cfg) -> pd.DataFrame:
    """Every rule on every evaluation condition (valid and test) of the profile, written as Predictions.

    Scores depend on the queries only; the Platt map of each training corpus is fitted on its
    validation split under the training sampler and applied to every condition. Returns one
    row per rule x training corpus x condition with R@1 and ECE.
    """

    conds = eval_conditions(cfg)
    train_sampler = cfg.negatives.train.value
    # the training condition's validation split of each training corpus (built for early selection, an eval
    # condition or not) fits the Platt maps
    fits = {
        tc.value: Condition(tc.value, "valid", train_sampler, cfg.negatives.eval_k) for tc in cfg.rankers.train_corpora
    }
    extra = list({f.name: f for f in fits.values() if f.name not in {c.name for c in conds}}.values())
    queries = {c.name: load_query_set(cfg, c.corpus, c.split, c.sampler, c.k) for c in conds + extra}
    stats = {
        key: BM25Stats(load_pool(cfg, *key), k1=cfg.negatives.bm25.k1, b=cfg.negatives.bm25.b)
        for key in dict.fromkeys((c.corpus, c.split) for c in conds + extra)
    }
    emb = cfg.negatives.embedding
    similarity = dict(
        zip(
            queries,
            biencoder_similarity(
                list(queries.values()), emb.model, getattr(emb.precision, "value", emb.precision), emb.batch_size
            ),
        )
    )
    scores: dict[tuple[str, str], np.ndarray] = {}
    seeds = {c.name: [cfg.seed + i] * len(BaselineName) for i, c in enumerate(conds)}
    seeds.update({f.name: [cfg.seed + len(conds) + i for i in range(len(BaselineName))] for f in extra})
    for c in conds + extra:
        overlap = bm25_overlap(queries[c.name], stats[(c.corpus, c.split)])  # most and least overlap share it
        for name, seed in zip(BaselineName, seeds[c.name]):
            scores[(name.value, c.name)] = baseline_scores(
                name, queries[c.name], seed=seed, overlap=overlap, similarity=similarity[c.name]
            )
    rows = []
    for tc in cfg.rankers.train_corpora:
        fit_on = fits[tc.value]
        labels = np.array([q.labels for q in queries[fit_on.name]])
        for name in BaselineName:
            ab = platt_fit(scores[(name.value, fit_on.name)], labels)
            for c in conds:
                pred = baseline_predictions(
                    name,
                    queries[c.name],
                    scores[(name.value, c.name)],
                    ab,
                    meta={
                        "profile": cfg.profile,
                        "train_corpus": tc.value,
                        "condition": c.name,
                        "seed": cfg.seed,
                        "platt_fitted_on": fit_on.name,
                        "name": f"baseline:{name.value}/{tc.value}/{c.name}",
                    },
                )
                pred.save(baselines_path(cfg, name, tc.value, c))
                rows.append(
                    {
                        "baseline": name.value,
                        "train_corpus": tc.value,
                        "corpus": c.corpus,
                        "split": c.split,
                        "sampler": c.sampler,
                        f"R{c.k + 1}@1": float(np.nanmean(recall_at_k(pred.probs, pred.labels, 1))),
                        "ECE": ece(pred.probs, pred.labels),
                        "queries": len(queries[c.name]),
                    }
                )
    out = pd.DataFrame(rows)
    _check_baselines(cfg, out)
    return out.drop(columns="queries")


def _check_baselines(cfg, runs: pd.DataFrame) -> None:
    """Every rule x training corpus x evaluation condition once, and the random rule within four standard
    errors of chance (1/K) on each: a random rule that is not at chance means the candidates' order leaks the label."""

    name, keys = "baselines", ("baseline", "train_corpus", "corpus", "split", "sampler")
    recall = f"R{cfg.negatives.eval_k + 1}@1"
    problems = rows_expected(
        name,
        runs,
        keys,
        [
            (n.value, tc.value, c.corpus, c.split, c.sampler)
            for n in BaselineName
            for tc in cfg.rankers.train_corpora
            for c in eval_conditions(cfg)
        ],
    )
    chance = 1.0 / (cfg.negatives.eval_k + 1)
    random = runs[runs["baseline"] == BaselineName.random.value]
    at_chance = (random[recall] - chance).abs() <= 4 * np.sqrt(chance * (1 - chance) / random["queries"])
    problems += rows_failing(
        name, random, at_chance, keys, f"{recall} within 4 standard errors of chance {chance:.3f}", [recall, "queries"]
    )
    raise_problems(problems)


def load_baseline(cfg, name: str | BaselineName, train_corpus: str, condition) -> Predictions:
    path = baselines_path(cfg, name, train_corpus, condition)
    if not path.exists():
        raise MissingStepError(f"{path} does not exist: run `make nb-02_negatives PROFILE={cfg.profile}` first")
    return Predictions.load(path)


def best_baselines(cfg, train_corpus: str, split: str = "test") -> pd.DataFrame:
    """Per condition of ``split``: each rule's R@1 and the best of them (the bar a trained ranker must clear)."""

    rows = []
    for c in eval_conditions(cfg, (split,)):
        r1 = {
            n.value: float(
                np.nanmean(recall_at_k((p := load_baseline(cfg, n, str(train_corpus), c)).probs, p.labels, 1))
            )
            for n in BaselineName
        }
        best = max(r1, key=r1.__getitem__)
        rows.append(
            {
                "corpus": c.corpus,
                "sampler": c.sampler,
                **{f"R@1 {n}": v for n, v in r1.items()},
                "best baseline": best,
                "best baseline R@1": r1[best],
            }
        )
    return pd.DataFrame(rows)


#: A trained ranker within this much R@1 of a rule that learns nothing, in distribution, gets a warning.
SHORTCUT_MARGIN = 0.05


def beside_best(cfg, summary: pd.DataFrame, train_corpus: str) -> pd.DataFrame:
    """A trained ranker's test rows (:func:`calibrank.study.model.experiment.predict_conditions`) beside the best rule of each condition."""
    recall = f"R{cfg.negatives.eval_k + 1}@1"
    best = best_baselines(cfg, train_corpus)[["corpus", "sampler", "best baseline", "best baseline R@1"]]
    test = summary[summary["split"] == "test"][["corpus", "sampler", "shift", recall]]
    out = test.merge(best, on=["corpus", "sampler"], how="left")
    out["best baseline"] = out["best baseline"].map(DISPLAY_NAMES)
    out["margin"] = out[recall] - out["best baseline R@1"]
    return out


def ranking_check(metrics: pd.DataFrame, baseline_metrics: pd.DataFrame, k: int) -> pd.DataFrame:
    """Does each trained ranker rank? One row per ranker x training corpus (main seed's mean over seeds).

    R@1 in distribution against the best rule's, and the lowest R@1 over test conditions against
    chance. ``metrics`` / ``baseline_metrics``: the ``metrics_all`` / ``baselines_all`` tables of
    :func:`calibrank.study.analysis.study.metrics_table` / :func:`calibrank.study.analysis.study.baseline_metrics_table`.
    """

    keys = ["ranker", "train_corpus", "corpus", "sampler", "shift"]
    m = metrics.groupby(keys, sort=False)["R@1"].mean().reset_index()
    b = baseline_metrics.groupby(keys, sort=False)["R@1"].mean().reset_index()
    rows = []
    for (ranker, tc), grp in m.groupby(["ranker", "train_corpus"], sort=False):
        ind = grp[grp["shift"] == "in distribution"]
        rules = b[(b["train_corpus"] == tc) & (b["shift"] == "in distribution")]
        if ind.empty or rules.empty:
            continue
        best = rules.loc[rules["R@1"].idxmax()]
        low = grp.loc[grp["R@1"].idxmin()]
        rows.append(
            {
                "ranker": ranker,
                "train_corpus": tc,
                "in distribution": f"{ind['corpus'].iloc[0]} · {ind['sampler'].iloc[0]}",
                "R@1": float(ind["R@1"].iloc[0]),
                "best rule": DISPLAY_NAMES[str(best["ranker"]).removeprefix("baseline:")],
                "best rule R@1": float(best["R@1"]),
                "margin": float(ind["R@1"].iloc[0] - best["R@1"]),
                "lowest R@1": float(low["R@1"]),
                "lowest on": f"{low['corpus']} · {low['sampler']}",
                "at or below chance": bool(low["R@1"] <= 1.0 / (k + 1)),
            }
        )
    return pd.DataFrame(rows)


def ranking_warnings(check: pd.DataFrame, margin: float = SHORTCUT_MARGIN) -> list[str]:
    """Plain sentences for :func:`ranking_check` rows within ``margin`` of a rule or at / below chance."""
    out = []
    for _, r in check.iterrows():
        if r["margin"] < margin:
            out.append(
                f"{r['ranker']} (trained on {r['train_corpus']}) scores R@1 {r['R@1']:.3f} in distribution, less than "
                f"{margin} above the rule '{r['best rule']}' ({r['best rule R@1']:.3f}), which learns nothing "
                f"from this data."
            )
        if r["at or below chance"]:
            out.append(
                f"{r['ranker']} (trained on {r['train_corpus']}) is at or below chance on {r['lowest on']} "
                f"(R@1 {r['lowest R@1']:.3f})."
            )
    return out
