"""Descriptive statistics of examples and query sets, as tables (compute only; plots in :mod:`calibrank.study.analysis.plots`).

Lengths are counted in whitespace tokens (words), independent of any model's tokenizer.
The lexical overlap of a candidate with its context is the Jaccard similarity of their
lower-cased word sets: it shows how much harder BM25 negatives are than random ones.
Each table checks itself where it is built (:class:`calibrank.table_checks.TableError`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from calibrank.study.data.schema import Example, RankingQuery
from calibrank.table_checks import fmt, raise_problems, rows_expected, rows_failing

__all__ = ["corpus_table", "length_frame", "overlap_table", "side_by_side", "split_leaks"]

_WORD = re.compile(r"\w+")
_TEST_SET = re.compile(r"^(?P<corpus>[^/]+)/test-(?P<sampler>random|bm25)-k(?P<k>\d+)$")
"""A test query set of the random or the BM25 sampler, by its name (``<corpus>/<split>-<sampler>-k<k>``)."""


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
    out = pd.DataFrame(rows)
    _check_corpus_table(out, examples)
    return out


def split_leaks(examples: Mapping[str, Mapping[str, Sequence[Example]]]) -> list[str]:
    """Dialogues that sit in two splits of one corpus (empty when the split is by dialogue, as it must be)."""
    problems = []
    for corpus, splits in examples.items():
        ids = {s: {e.dialogue_id for e in exs} for s, exs in splits.items()}
        names = list(ids)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                shared = ids[a] & ids[b]
                if shared:
                    problems.append(
                        f"{corpus}: {len(shared)} dialogues in both {a} and {b}, e.g. {sorted(shared)[0]!r}"
                    )
    return problems


def _check_corpus_table(table: pd.DataFrame, examples: Mapping[str, Mapping[str, Sequence[Example]]]) -> None:
    """One row per corpus x split, each with examples and a response pool at least as large; no dialogue
    in two splits of one corpus (:func:`split_leaks`)."""
    name, keys = "corpus table", ("corpus", "split")
    raise_problems(
        rows_expected(name, table, keys, [(c, s) for c, splits in examples.items() for s in splits])
        + rows_failing(name, table, table["examples"] > 0, keys, "examples > 0", ["examples"])
        + rows_failing(
            name,
            table,
            table["response pool"] >= table["examples"],
            keys,
            "a response pool at least as large as the examples",
            ["response pool", "examples"],
        )
        + [f"{name}: split by dialogue expected, found {leak}" for leak in split_leaks(examples)]
    )


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
    out = pd.DataFrame(rows)
    _check_overlap(out)
    return out


def _check_overlap(table: pd.DataFrame) -> None:
    """On every corpus whose test split has a random and a BM25 query set (of one k), the BM25 negatives
    overlap their context more than the random ones: BM25 picks them for sharing the context's words."""
    sets: dict[tuple[str, str], dict[str, pd.Series]] = {}
    for _, row in table.iterrows():
        m = _TEST_SET.match(str(row["query set"]))
        if m:
            sets.setdefault((m["corpus"], m["k"]), {})[m["sampler"]] = row
    problems = []
    for (corpus, _), pair in sets.items():
        if len(pair) == 2:
            b, r = float(pair["bm25"]["overlap negatives"]), float(pair["random"]["overlap negatives"])
            if not b > r:
                problems.append(
                    f"overlap table: {corpus}: expected the BM25 negatives ({pair['bm25']['query set']}) "
                    f"to overlap their context more than the random ones ({pair['random']['query set']}), "
                    f"found overlap negatives {fmt(b)} vs {fmt(r)}"
                )
    raise_problems(problems)


def side_by_side(
    by_sampler: Mapping[str, Sequence[RankingQuery]], n: int = 3, per_query: int = 3, seed: int = 0
) -> pd.DataFrame:
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
