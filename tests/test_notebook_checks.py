"""Tests of calibrank.checks (notebooks 01, 02, 03 and 07): tables built as the notebooks build them pass,
and every defect each check looks for is reported with its table and row."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibrank import checks
from calibrank.config import load_config
from calibrank.data import stats
from calibrank.data.schema import Example, RankingQuery
from calibrank.efficiency import efficiency_table
from calibrank.experiment import expected_samples, ranker_conditions, shift_kind


@pytest.fixture(scope="module")
def cfg():
    return load_config("smoke")


def _has(problems: list[str], *parts: str) -> None:
    """Some problem names every part (table, row, expectation)."""
    assert any(all(p in msg for p in parts) for msg in problems), (parts, problems)


def _set(table: pd.DataFrame, mask, column: str, value) -> pd.DataFrame:
    out = table.copy()
    out.loc[np.asarray(mask, dtype=bool), column] = value
    return out


# ------------------------------------------------------------------------------ 01 data
def _examples() -> dict:
    """Two corpora, three splits, every dialogue in one split (``<corpus>-<split>-d<i>``)."""
    out = {}
    for corpus, n in (("chitchat", 3), ("chatterbot", 2)):
        out[corpus] = {split: [Example(f"{corpus}-{split}-{i}", (f"hello {i}", "how are you"), f"fine thanks {i}",
                                       dialogue_id=f"{corpus}-{split}-d{i // 2}", domain="chat")
                               for i in range(n * (3 if split == "train" else 1))]
                       for split in ("train", "valid", "test")}
    return out


def _summary(examples: dict) -> dict:
    """What :func:`calibrank.querysets.prepare_data` returns for ``examples`` (a pool of 2 responses per example)."""
    return {"corpora": {c: {"dialogues": {s: len({e.dialogue_id for e in exs}) for s, exs in splits.items()},
                            "pool": {s: 2 * len(exs) for s, exs in splits.items()}}
                        for c, splits in examples.items()}}


def test_corpus_table_problems():
    examples = _examples()
    table = stats.corpus_table(examples, _summary(examples))
    f = checks.corpus_table_problems
    assert f(table, examples) == []
    row = (table["corpus"] == "chatterbot") & (table["split"] == "valid")
    _has(f(table[~row], examples), "corpus table: 0 rows for corpus=chatterbot, split=valid, expected 1")
    _has(f(pd.concat([table, table[row]]), examples), "corpus table: 2 rows for corpus=chatterbot, split=valid")
    where = "corpus=chatterbot, split=valid"
    _has(f(_set(table, row, "examples", 0), examples), f"corpus table: {where}: expected examples > 0",
         "found examples 0")
    _has(f(_set(table, row, "examples", np.nan), examples), f"{where}: expected examples > 0")
    _has(f(_set(table, row, "response pool", 1), examples), f"{where}: expected a response pool at least as "
         "large as the examples, found response pool 1, examples 2")
    leaky = {c: dict(splits) for c, splits in examples.items()}
    leaky["chitchat"]["test"] = [*leaky["chitchat"]["test"],
                                 Example("x", ("hi",), "yo", dialogue_id="chitchat-train-d0")]
    _has(f(stats.corpus_table(leaky, _summary(leaky)), leaky), "examples: split by dialogue expected",
         "chitchat: 1 dialogues in both train and test")
    _has(f(table.drop(columns="response pool"), examples), "corpus table: no column 'response pool'")


# ------------------------------------------------------------------------------ 02 negatives
def _query(qid: str, negatives: list[str]) -> RankingQuery:
    return RankingQuery(qid, ("do you like green apples", "yes i like green apples a lot"),
                        ("sure why not", *negatives), (1,) + (0,) * len(negatives))


def _overlap(cfg) -> pd.DataFrame:
    """The overlap table of test query sets where BM25 negatives repeat the context and random ones do not."""
    k = cfg.negatives.eval_k
    sets = {}
    for corpus in cfg.data.corpora:
        for sampler, negs in (("random", [f"the weather is nice {j}" for j in range(k)]),
                              ("bm25", [f"i like green apples {j}" for j in range(k)]),
                              ("mixed", [f"green weather {j}" for j in range(k)])):
            sets[f"{corpus.value}/test-{sampler}-k{k}"] = [_query(f"q{i}", negs) for i in range(3)]
    return stats.overlap_table(sets)


def test_overlap_problems(cfg):
    overlap = _overlap(cfg)
    f = checks.overlap_problems
    assert f(cfg, overlap) == []
    bm25 = overlap["query set"] == "chatterbot/test-bm25-k9"
    low = _set(overlap, bm25, "overlap negatives", 0.0)
    _has(f(cfg, low), "overlap table: chatterbot: expected the BM25 negatives (chatterbot/test-bm25-k9) to overlap",
         "more than the random ones (chatterbot/test-random-k9), found overlap negatives 0 vs")
    _has(f(cfg, _set(overlap, bm25, "overlap negatives", np.nan)), "chatterbot: expected the BM25", "found overlap "
         "negatives nan")
    _has(f(cfg, pd.concat([overlap, overlap[bm25]])), "overlap table: 2 rows for chatterbot/test-bm25-k9, expected 1")
    assert f(cfg, low[~bm25]) == []  # no BM25 query set of that corpus: nothing to compare
    _has(f(cfg, overlap.rename(columns={"overlap negatives": "overlap"})), "no column 'overlap negatives'")


# ------------------------------------------------------------------------------ 03 train
def _run_summary(cfg, ranker: str) -> pd.DataFrame:
    """A summary with the columns of :func:`calibrank.experiment.predict_conditions`, one row per condition."""
    s = expected_samples(cfg, ranker)
    rows = [{"corpus": c.corpus, "split": c.split, "sampler": c.sampler,
             "shift": shift_kind(c, "chitchat", cfg.negatives.train.value), "queries": 24, "samples": s,
             f"R{c.k + 1}@1": 0.1 + 0.02 * i, "ECE": 0.3 - 0.01 * i, "mean var": 0.002 * (s > 1), "ms/query": 3.5}
            for i, c in enumerate(ranker_conditions(cfg, ranker))]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ranker", ["bert", "mc_dropout"])
def test_run_summary_problems(cfg, ranker):
    summary = _run_summary(cfg, ranker)
    f = checks.run_summary_problems
    s = expected_samples(cfg, ranker)
    assert (s > 1) == (ranker == "mc_dropout") and f(cfg, ranker, summary) == []
    name = f"run summary of {ranker}"
    row = (summary["corpus"] == "chatterbot") & (summary["split"] == "test") & (summary["sampler"] == "bm25")
    where = "corpus=chatterbot, split=test, sampler=bm25"
    dropped = f(cfg, ranker, summary[~row])
    _has(dropped, f"{name}: {len(summary) - 1} rows, expected {len(summary)}")
    _has(dropped, f"{name}: 0 rows for {where}, expected 1")
    _has(f(cfg, ranker, pd.concat([summary, summary[row]])), f"{name}: 2 rows for {where}")
    _has(f(cfg, ranker, _set(summary, row, "R10@1", 1.2)), f"{name}: {where}: expected R10@1 in [0, 1]",
         "found R10@1 1.2")
    _has(f(cfg, ranker, _set(summary, row, "ECE", np.nan)), where, "expected ECE in [0, 1], found ECE nan")
    _has(f(cfg, ranker, _set(summary, row, "samples", s + 1)), where, f"expected samples {s}", f"found samples {s + 1}")
    if s > 1:
        _has(f(cfg, ranker, _set(summary, row, "mean var", 0.0)), where, "expected mean var > 0")
    else:
        _has(f(cfg, ranker, _set(summary, row, "mean var", 1e-6)), where, "expected mean var 0 (a deterministic ranker")
    _has(f(cfg, ranker, summary.drop(columns="R10@1")), "no column 'R10@1'")


def test_the_validation_conditions_are_expected_for_a_ranker_with_samples_only(cfg):
    """A deterministic ranker's summary with validation rows, or a stochastic one's without, is wrong."""
    mc = _run_summary(cfg, "mc_dropout")
    valid = mc["split"] == "valid"
    assert valid.any()
    _has(checks.run_summary_problems(cfg, "mc_dropout", mc[~valid]),
         "0 rows for corpus=chitchat, split=valid, sampler=mixed")
    bert = pd.concat([_run_summary(cfg, "bert"), mc[valid].assign(samples=1, **{"mean var": 0.0})])
    _has(checks.run_summary_problems(cfg, "bert", bert), "unexpected row",
         "for corpus=chitchat, split=valid, sampler=mixed, expected none")


# ------------------------------------------------------------------------------ 07 efficiency
def _measured(cfg, repeats: int = 3) -> pd.DataFrame:
    """A table with the columns of :func:`calibrank.efficiency.measure_efficiency`, one row per ranker."""
    rows = []
    for i, r in enumerate(cfg.rankers.names):
        times = np.array([10.0, 11.0, 9.5, 10.5][:repeats]) * (1 + i) + np.arange(repeats) * 0.1 * i
        rows.append({"ranker": r.value, "parameters": 4_000_000 + 1000 * i, "ms/query": float(np.median(times)),
                     "ms/query (fastest)": float(times.min()), "ms/query per repeat": " ".join(f"{x:.6g}" for x in times),
                     "samples": expected_samples(cfg, r.value), "queries": 24, "candidates": 10, "device": "cpu",
                     "corpus": "chitchat", "sampler": "mixed"})
    return pd.DataFrame(rows)


def test_measured_efficiency_problems(cfg):
    measured = _measured(cfg)
    f = checks.measured_efficiency_problems
    assert len(measured) == len(cfg.rankers.names) > 2 and f(cfg, measured) == []
    name = "measured efficiency"
    sngp = measured["ranker"] == "sngp"
    dropped = f(cfg, measured[~sngp])
    _has(dropped, f"{name}: {len(measured) - 1} rows, expected {len(measured)}")
    _has(dropped, f"{name}: 0 rows for ranker=sngp, expected 1")
    _has(f(cfg, _set(measured, sngp, "ranker", "bm25")), "1 unexpected row for ranker=bm25")
    _has(f(cfg, _set(measured, sngp, "parameters", 0)), f"{name}: ranker=sngp: expected parameters > 0",
         "found parameters 0")
    _has(f(cfg, _set(measured, sngp, "ms/query", np.nan)), "ranker=sngp: expected ms/query > 0, found ms/query nan")
    _has(f(cfg, _set(measured, sngp, "ms/query (fastest)", 1e6)),
         "ranker=sngp: expected ms/query (fastest) <= ms/query")
    _has(f(cfg, _set(measured, sngp, "queries", 23)), "expected one value of queries", "found 2: ['23', '24']")
    _has(f(cfg, _set(measured, sngp, "corpus", "chatterbot")), "expected one value of corpus",
         "['chatterbot', 'chitchat']")


def test_efficiency_table_problems(cfg):
    table = efficiency_table(_measured(cfg))
    f = checks.efficiency_table_problems
    assert f(table, 3) == []
    name = "efficiency table"
    bert, gp = table["ranker"] == "bert", table["ranker"] == "gpf_bert"
    for col in ("params (M)", "ms/query", "ratio_to_bert"):
        _has(f(_set(table, gp, col, np.nan), 3), f"{name}: ranker=gpf_bert: expected a value of {col}, found {col} nan")
    _has(f(_set(table, bert, "ratio_to_bert", 1.1), 3), f"{name}: ranker=bert: expected ratio_to_bert 1 (within 1e-12)",
         "found ratio_to_bert 1.1")
    _has(f(table[~bert], 3), f"{name}: no bert row, expected one")
    _has(f(table, 2), f"{name}: ranker=bert: expected repeats 2, found repeats 3")
    _has(f(_set(table, gp, "ratio lo", 99.0), 3), f"{name}: ranker=gpf_bert: expected ratio lo <= ratio hi (3 repeats "
         "give an interval), found ratio lo 99")
    _has(f(_set(table, gp, "ratio hi", np.nan), 3), "ranker=gpf_bert: expected ratio lo <= ratio hi")
    one = efficiency_table(_measured(cfg, repeats=1))
    assert one[["ratio lo", "ratio hi"]].isna().all().all() and f(one, 1) == []  # one repeat: no interval to check


def test_the_notebook_checks_do_not_import_torch():
    code = "import sys, calibrank.checks; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
