"""The tables of notebooks 01, 02, 03 and 07 check themselves where they are built: built from good inputs
they pass, and every defect raises TableError naming the table, the row and what was expected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrank.study.analysis import efficiency
from calibrank.study.data import baselines, conditions, stats
from calibrank.study.data.conditions import expected_samples, ranker_conditions, shift_kind
from calibrank.study.data.schema import Example, RankingQuery
from calibrank.study.model import experiment
from calibrank.study.settings.config import load_config
from test_analysis_checks import raises


@pytest.fixture(scope="module")
def cfg():
    return load_config("smoke")


def _set(table: pd.DataFrame, mask, column: str, value) -> pd.DataFrame:
    out = table.copy()
    out.loc[np.asarray(mask, dtype=bool), column] = value
    return out


# ------------------------------------------------------------------------------ 01 data
def _examples() -> dict:
    """Two corpora, three splits, every dialogue in one split (``<corpus>-<split>-d<i>``)."""
    return {
        corpus: {
            split: [
                Example(
                    f"{corpus}-{split}-{i}",
                    (f"hello {i}", "how are you"),
                    f"fine thanks {i}",
                    dialogue_id=f"{corpus}-{split}-d{i // 2}",
                    domain="chat",
                )
                for i in range(n * (3 if split == "train" else 1))
            ]
            for split in ("train", "valid", "test")
        }
        for corpus, n in (("chitchat", 3), ("chatterbot", 2))
    }


def _summary(examples: dict, pool: int = 2) -> dict:
    """What :func:`calibrank.study.data.querysets.prepare_data` returns for ``examples`` (``pool`` responses per example)."""
    return {
        "corpora": {
            c: {
                "dialogues": {s: len({e.dialogue_id for e in exs}) for s, exs in splits.items()},
                "pool": {s: pool * len(exs) for s, exs in splits.items()},
            }
            for c, splits in examples.items()
        }
    }


def test_the_corpus_table(cfg):
    examples = _examples()
    assert len(stats.corpus_table(examples, _summary(examples))) == 6
    raises(
        stats.corpus_table,
        examples,
        _summary(examples, pool=0),
        words=(
            "corpus table: corpus=chitchat, split=train: expected a response pool at least as large as the examples",
            "found response pool 0, examples 9",
        ),
    )
    empty = {**examples, "chatterbot": {**examples["chatterbot"], "valid": []}}
    with pytest.warns(RuntimeWarning):  # the mean length of no examples
        raises(
            stats.corpus_table, empty, _summary(empty), words=("corpus=chatterbot, split=valid: expected examples > 0",)
        )
    leaky = {
        **examples,
        "chitchat": {
            **examples["chitchat"],
            "test": [*examples["chitchat"]["test"], Example("x", ("hi",), "yo", dialogue_id="chitchat-train-d0")],
        },
    }
    raises(
        stats.corpus_table,
        leaky,
        _summary(leaky),
        words=("corpus table: split by dialogue expected", "chitchat: 1 dialogues in both train and test"),
    )


# ------------------------------------------------------------------------------ 02 negatives
def _query(qid: str, negatives: list[str]) -> RankingQuery:
    return RankingQuery(
        qid,
        ("do you like green apples", "yes i like green apples a lot"),
        ("sure why not", *negatives),
        (1,) + (0,) * len(negatives),
    )


def _query_sets(cfg, bm25: str = "i like green apples") -> dict:
    """Test query sets where BM25 negatives repeat the context (``bm25``) and random ones do not."""
    k = cfg.negatives.eval_k
    return {
        f"{corpus.value}/test-{sampler}-k{k}": [_query(f"q{i}", [f"{negs} {j}" for j in range(k)]) for i in range(3)]
        for corpus in cfg.data.corpora
        for sampler, negs in (("random", "the weather is nice"), ("bm25", bm25), ("mixed", "green weather"))
    }


def test_the_overlap_table(cfg):
    assert len(stats.overlap_table(_query_sets(cfg))) == 3 * len(cfg.data.corpora)
    raises(
        stats.overlap_table,
        _query_sets(cfg, bm25="the weather is nice today"),
        words=(
            "overlap table: chatterbot: expected the BM25 negatives (chatterbot/test-bm25-k9) to overlap",
            "more than the random ones (chatterbot/test-random-k9), found overlap negatives 0 vs",
        ),
    )
    alone = {name: qs for name, qs in _query_sets(cfg, bm25="the weather").items() if "random" not in name}
    assert len(stats.overlap_table(alone)) == 2 * len(cfg.data.corpora)  # no random set: nothing to compare


def test_the_rules_that_learn_nothing(cfg):
    k, keys = cfg.negatives.eval_k, ("baseline", "train_corpus", "corpus", "split", "sampler")
    runs = pd.DataFrame(
        [
            {
                "baseline": n.value,
                "train_corpus": tc.value,
                "corpus": c.corpus,
                "split": c.split,
                "sampler": c.sampler,
                f"R{k + 1}@1": 1 / (k + 1),
                "queries": 100,
            }
            for n in baselines.BaselineName
            for tc in cfg.rankers.train_corpora
            for c in conditions.eval_conditions(cfg)
        ]
    )
    baselines._check_baselines(cfg, runs)
    raises(
        baselines._check_baselines,
        cfg,
        runs.iloc[1:],
        words=("baselines", "0 rows for", ", ".join(f"{c}={runs[c].iloc[0]}" for c in keys)),
    )
    leak = _set(runs, runs["baseline"] == "random", f"R{k + 1}@1", 0.5)
    raises(
        baselines._check_baselines,
        cfg,
        leak,
        words=("baselines: baseline=random", "within 4 standard errors of chance", "found R10@1 0.5, queries 100"),
    )


# ------------------------------------------------------------------------------ 03 train
def _run_summary(cfg, ranker: str) -> pd.DataFrame:
    """A summary with the columns of :func:`calibrank.study.model.experiment.predict_conditions`, one row per condition."""
    s = expected_samples(cfg, ranker)
    return pd.DataFrame(
        [
            {
                "corpus": c.corpus,
                "split": c.split,
                "sampler": c.sampler,
                "shift": shift_kind(c, "chitchat", cfg.negatives.train.value),
                "queries": 24,
                "samples": s,
                f"R{c.k + 1}@1": 0.1 + 0.02 * i,
                "ECE": 0.3 - 0.01 * i,
                "mean var": 0.002 * (s > 1),
                "ms/query": 3.5,
            }
            for i, c in enumerate(ranker_conditions(cfg, ranker))
        ]
    )


@pytest.mark.parametrize("ranker", ["bert", "mc_dropout"])
def test_the_run_summary(cfg, ranker):
    summary, s, check = _run_summary(cfg, ranker), expected_samples(cfg, ranker), experiment._check_run_summary
    assert (s > 1) == (ranker == "mc_dropout")
    check(cfg, ranker, summary)
    name = f"run summary of {ranker}"
    row = (summary["corpus"] == "chatterbot") & (summary["split"] == "test") & (summary["sampler"] == "bm25")
    where = "corpus=chatterbot, split=test, sampler=bm25"
    raises(check, cfg, ranker, summary[~row], words=(f"{name}: {len(summary) - 1} rows, expected {len(summary)}",))
    raises(check, cfg, ranker, pd.concat([summary, summary[row]]), words=(f"{name}: 2 rows for {where}",))
    raises(check, cfg, ranker, _set(summary, row, "R10@1", 1.2), words=(f"{name}: {where}: expected R10@1 in [0, 1]",))
    raises(
        check, cfg, ranker, _set(summary, row, "ECE", np.nan), words=(where, "expected ECE in [0, 1], found ECE nan")
    )
    raises(check, cfg, ranker, _set(summary, row, "samples", s + 1), words=(where, f"expected samples {s}"))
    raises(
        check,
        cfg,
        ranker,
        _set(summary, row, "mean var", 1e-6 if s == 1 else 0.0),
        words=(where, "expected mean var 0 (a deterministic ranker" if s == 1 else "expected mean var > 0"),
    )


def test_the_validation_conditions_are_expected_for_a_ranker_with_samples_only(cfg):
    mc = _run_summary(cfg, "mc_dropout")
    valid = mc["split"] == "valid"
    raises(
        experiment._check_run_summary,
        cfg,
        "mc_dropout",
        mc[~valid],
        words=("0 rows for corpus=chitchat, split=valid, sampler=mixed",),
    )
    bert = pd.concat([_run_summary(cfg, "bert"), mc[valid].assign(samples=1, **{"mean var": 0.0})])
    raises(
        experiment._check_run_summary,
        cfg,
        "bert",
        bert,
        words=("unexpected row", "for corpus=chitchat, split=valid, sampler=mixed, expected none"),
    )


# ------------------------------------------------------------------------------ 07 efficiency
def _measured(cfg, repeats: int = 3) -> pd.DataFrame:
    """A table with the columns of :func:`calibrank.study.analysis.efficiency.measure_efficiency`, one row per ranker."""
    rows = []
    for i, r in enumerate(cfg.rankers.names):
        times = np.array([10.0, 11.0, 9.5, 10.5][:repeats]) * (1 + i) + np.arange(repeats) * 0.1 * i
        rows.append(
            {
                "ranker": r.value,
                "parameters": 4_000_000 + 1000 * i,
                "ms/query": float(np.median(times)),
                "ms/query (fastest)": float(times.min()),
                "ms/query per repeat": " ".join(f"{x:.6g}" for x in times),
                "samples": expected_samples(cfg, r.value),
                "queries": 24,
                "candidates": 10,
                "device": "cpu",
                "corpus": "chitchat",
                "sampler": "mixed",
            }
        )
    return pd.DataFrame(rows)


def test_the_measured_efficiency(cfg):
    measured, names, check = _measured(cfg), [r.value for r in cfg.rankers.names], efficiency._check_measured
    check(measured, names)
    name, sngp = "measured efficiency", measured["ranker"] == "sngp"
    raises(check, measured[~sngp], names, words=(f"{name}: {len(measured) - 1} rows, expected {len(measured)}",))
    raises(check, _set(measured, sngp, "ranker", "bm25"), names, words=("1 unexpected row for ranker=bm25",))
    raises(
        check, _set(measured, sngp, "parameters", 0), names, words=(f"{name}: ranker=sngp: expected parameters > 0",)
    )
    raises(check, _set(measured, sngp, "ms/query", np.nan), names, words=("ranker=sngp: expected ms/query > 0",))
    raises(
        check,
        _set(measured, sngp, "ms/query (fastest)", 1e6),
        names,
        words=("ranker=sngp: expected ms/query (fastest) <= ms/query",),
    )
    raises(
        check,
        _set(measured, sngp, "queries", 23),
        names,
        words=("expected one value of queries", "found 2: ['23', '24']"),
    )
    raises(check, _set(measured, sngp, "corpus", "chatterbot"), names, words=("expected one value of corpus",))


def test_the_efficiency_table(cfg):
    measured, f, name = _measured(cfg), efficiency.efficiency_table, "efficiency table"
    table = f(measured)
    gp = measured["ranker"] == "gpf_bert"
    for col, value in (("parameters", np.nan), ("ms/query", np.nan)):
        raises(f, _set(measured, gp, col, value), words=(f"{name}: ranker=gpf_bert: expected a value of",))
    raises(f, measured[measured["ranker"] != "bert"], words=(f"{name}: no bert row, expected one",))
    raises(
        f,
        _set(measured, gp, "ms/query per repeat", "1 2"),
        words=(f"{name}: ranker=gpf_bert: expected repeats 3 (as bert)",),
    )
    raises(
        efficiency._check_efficiency,
        _set(table, table["ranker"] == "bert", "ratio_to_bert", 1.1),
        "bert",
        words=(f"{name}: ranker=bert: expected ratio_to_bert 1 (within 1e-12)", "found ratio_to_bert 1.1"),
    )
    raises(
        efficiency._check_efficiency,
        _set(table, table["ranker"] == "gpf_bert", "ratio lo", 99.0),
        "bert",
        words=("ranker=gpf_bert: expected ratio lo <= ratio hi (3 repeats give an interval)", "found ratio lo 99"),
    )
    one = f(_measured(cfg, repeats=1))  # one repeat: no interval to check
    assert one[["ratio lo", "ratio hi"]].isna().all().all()
