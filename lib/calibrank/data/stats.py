"""Descriptive statistics of examples and query sets, as tables (compute only; plots in :mod:`calibrank.plots`).

Lengths are counted in whitespace tokens (words), independent of any model's tokenizer.
The lexical overlap of a candidate with its context is the Jaccard similarity of their
lower-cased word sets: it shows how much harder BM25 negatives are than random ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .schema import Example, RankingQuery

__all__ = ["corpus_table", "length_frame", "overlap_table", "side_by_side"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def corpus_table(examples: Mapping[str, Mapping[str, Sequence[Example]]], summary: Mapping) -> pd.DataFrame:
    """One row per (corpus, split): dialogues, examples, pool size, context and response lengths."""
    rows = []
    for corpus, splits in examples.items():
        info = summary["corpora"][corpus]
        for split, exs in splits.items():
            ctx_utts = np.array([len(e.context) for e in exs])
            ctx_words = np.array([sum(len(_words(u)) for u in e.context) for e in exs])
            resp_words = np.array([len(_words(e.response)) for e in exs])
            rows.append(
                {
                    "corpus": corpus,
                    "split": split,
                    "dialogues": info["dialogues"][split],
                    "examples": len(exs),
                    "response pool": info["pool"][split],
                    "context utterances (mean)": round(float(ctx_utts.mean()), 2),
                    "context words (median)": float(np.median(ctx_words)),
                    "response words (median)": float(np.median(resp_words)),
                    "domains": len({e.domain for e in exs}),
                }
            )
    return pd.DataFrame(rows)


def length_frame(examples: Mapping[str, Mapping[str, Sequence[Example]]]) -> pd.DataFrame:
    """Long table of lengths: columns corpus, split, part (context / response), words."""
    rows = []
    for corpus, splits in examples.items():
        for split, exs in splits.items():
            for e in exs:
                rows.append((corpus, split, "context", sum(len(_words(u)) for u in e.context)))
                rows.append((corpus, split, "response", len(_words(e.response))))
    return pd.DataFrame(rows, columns=["corpus", "split", "part", "words"])


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if (a or b) else 0.0


def overlap_table(query_sets: Mapping[str, Sequence[RankingQuery]], echo: float = 0.5) -> pd.DataFrame:
    """Per query set: how much the true responses and the negatives overlap their context.

    ``overlap``: Jaccard of the candidate's words with the whole context's; ``closest turn``: the
    largest Jaccard with one turn; ``echo share``: candidates whose closest turn reaches ``echo``.
    Negatives that overlap far more than true responses let "least overlap wins" rank them: a shortcut.
    """
    rows = []
    for name, queries in query_sets.items():
        parts: dict[int, dict[str, list[float]]] = {1: {"all": [], "turn": []}, 0: {"all": [], "turn": []}}
        for q in queries:
            ctx = set(_words(" ".join(q.context)))
            turns = [set(_words(u)) for u in q.context]
            for cand, lab in zip(q.candidates, q.labels):
                w = set(_words(cand))
                parts[lab]["all"].append(_jaccard(ctx, w))
                parts[lab]["turn"].append(max(_jaccard(t, w) for t in turns))

        def mean(xs: list[float]) -> float:
            return round(float(np.mean(xs)), 4) if xs else float("nan")

        rows.append(
            {
                "query set": name,
                "queries": len(queries),
                "candidates/query": len(queries[0].candidates) if queries else 0,
                "overlap relevant": mean(parts[1]["all"]),
                "overlap negatives": mean(parts[0]["all"]),
                "closest turn relevant": mean(parts[1]["turn"]),
                "closest turn negatives": mean(parts[0]["turn"]),
                "echo share relevant": mean([float(x >= echo) for x in parts[1]["turn"]]),
                "echo share negatives": mean([float(x >= echo) for x in parts[0]["turn"]]),
            }
        )
    return pd.DataFrame(rows)


def side_by_side(by_sampler: Mapping[str, Sequence[RankingQuery]], n: int = 3, per_query: int = 3, seed: int = 0) -> pd.DataFrame:
    """``n`` queries (seeded choice) shown with the first ``per_query`` negatives of each sampler.

    The query sets must be built from the same examples (same qids), e.g. one split's sets.
    """
    names = list(by_sampler)
    index = [{q.qid: q for q in by_sampler[s]} for s in names]
    common = sorted(set.intersection(*(set(ix) for ix in index)))
    if not common:
        raise ValueError("the query sets share no qid: they were not built from the same examples")
    pick = np.random.default_rng(seed).choice(len(common), size=min(n, len(common)), replace=False)
    rows = []
    for i in sorted(pick):
        qid = common[i]
        q0 = index[0][qid]
        row = {"qid": qid, "last context utterance": q0.context[-1], "true response": q0.candidates[q0.labels.index(1)]}
        for s, ix in zip(names, index):
            q = ix[qid]
            negs = [c for c, lab in zip(q.candidates, q.labels) if not lab][:per_query]
            row[f"{s} negatives"] = " | ".join(negs)
        rows.append(row)
    return pd.DataFrame(rows)
