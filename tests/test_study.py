"""Tests of calibrank.study.analysis.study (and efficiency.efficiency_table) on synthetic Predictions in a throw-away project root.

The synthetic rankers have hand-computable numbers: ``bert`` gives the relevant candidate 0.9
and every negative 0.35; ``temperature`` gives every candidate 0.5 (all tied); ``ensemble``
gives 0.8 / 0.2 (two identical members); ``mc_dropout`` has random samples.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibrank.predictions import Predictions, PredictionsError
from calibrank.study.analysis import study as st
from calibrank.study.analysis.efficiency import PAPER_EFFICIENCY, efficiency_table
from calibrank.study.data.conditions import eval_conditions, predictions_path, ranker_conditions
from calibrank.study.data.querysets import MissingStepError
from calibrank.study.settings.config import load_config

Q, K = 12, 10
RANKERS = ("bert", "mc_dropout", "ensemble", "temperature")


def synthetic_config(rankers=RANKERS, seeds=(0,), train_corpora=("chitchat",)):
    """The smoke profile with the first paper's protocol (BM25 training negatives; two corpora, three
    test samplers, k = 9) and these rankers, training seeds and training corpora."""
    return load_config(
        "smoke",
        {
            "rankers.names": list(rankers),
            "rankers.seeds": list(seeds),
            "rankers.train_corpora": list(train_corpora),
            "negatives.train": "bm25",
            "negatives.eval": ["random", "bm25", "embedding"],
        },
    )


def _labels(q: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.zeros((q, k), dtype=np.int8)
    labels[np.arange(q), rng.integers(0, k, size=q)] = 1
    return labels


def _samples(ranker: str, labels: np.ndarray, seed: int, shift: float) -> np.ndarray:
    y = labels.astype(float)
    if ranker == "bert":
        return (0.35 + 0.55 * y + shift * (1 - y))[None]
    if ranker == "temperature":
        return np.full((1, *labels.shape), 0.5)
    if ranker == "ensemble":
        p = 0.2 + 0.6 * y + 2 * shift * (1 - y)
        return np.stack([p, p])
    rng = np.random.default_rng(seed)
    return np.clip(0.3 + 0.4 * y + rng.normal(scale=0.1, size=(3, *labels.shape)), 0.01, 0.99)


def write_synthetic_study(
    root: Path,
    seeds=(0,),
    rankers=RANKERS,
    seed_shift: float = 0.01,
    train_corpora=("chitchat",),
    domain_drop: bool = False,
):
    """Predictions for every ranker x training corpus x condition of :func:`synthetic_config` under
    ``root`` (CALIBRANK_ROOT); its config. ``domain_drop``: ``bert`` trained on another corpus than
    the test corpus gives the relevant candidate 0.3, below every negative (R@1 0)."""
    cfg = synthetic_config(seeds=seeds, train_corpora=train_corpora)
    for ci, cond in enumerate(eval_conditions(cfg)):
        labels = _labels(Q, K, 100 + ci)
        qids = np.array([f"{cond.name}-q{i}" for i in range(Q)])
        for ranker in rankers:
            if cond not in ranker_conditions(cfg, ranker):
                continue  # validation Predictions exist for stochastic rankers only
            for tc in train_corpora:
                for si, seed in enumerate(seeds):
                    samples = _samples(ranker, labels, 1000 * ci + seed, seed_shift * si * (1 + ci % 3))
                    if domain_drop and ranker == "bert" and tc != cond.corpus:
                        samples = np.where(labels[None] == 1, 0.3, samples)
                    pred = Predictions(
                        qids=qids,
                        labels=labels,
                        probs=samples.mean(axis=0),
                        samples=samples,
                        meta={"ranker": ranker, "seed": seed, "condition": cond.name},
                    )
                    pred.save(predictions_path(cfg, ranker, tc, cond, seed))
    return cfg


@pytest.fixture
def study(tmp_root):
    return st.load_study(write_synthetic_study(tmp_root))


# ------------------------------------------------------------------------------ loading
def test_missing_predictions_name_the_make_target(tmp_root):
    with pytest.raises(MissingStepError, match=r"make nb-03_train-bert-chitchat PROFILE=smoke") as err:
        st.load_study(synthetic_config())
    assert ".npz does not exist" in str(err.value) and "other Predictions file(s) are missing" in str(err.value)


def test_missing_one_ranker_names_that_ranker(tmp_root):
    write_synthetic_study(tmp_root, rankers=("bert", "mc_dropout", "ensemble"))
    with pytest.raises(MissingStepError, match=r"make nb-03_train-temperature-chitchat PROFILE=smoke"):
        st.load_study(synthetic_config())


def test_a_seed_the_profile_lists_without_predictions_names_its_run(tmp_root):
    write_synthetic_study(tmp_root, seeds=(0, 1))
    with pytest.raises(MissingStepError, match=r"make nb-03_train-bert-chitchat-seed2 PROFILE=smoke"):
        st.load_study(synthetic_config(seeds=(0, 1, 2)))


def test_study_finds_every_cell_and_seed(tmp_root):
    data = st.load_study(write_synthetic_study(tmp_root, seeds=(0, 1, 2)))
    # test conditions for all four rankers, validation ones for the two stochastic rankers
    assert len(data.paths) == 4 * 6 + 2 * 6 == 36
    assert all(len(p) == 3 for p in data.paths.values())
    cond = data.test_conditions()[0]
    assert data.seeds("bert", "chitchat", cond) == [0, 1, 2]
    assert data.paths[("bert", "chitchat", cond.name)][1].name == f"{cond.name}-seed1.npz"
    assert {c.name for _, _, c in data.cells("valid")} == {c.name for c in data.test_conditions("valid")}
    assert {r for r, _, _ in data.cells("valid")} == {"mc_dropout", "ensemble"}
    assert data.stochastic_rankers() == ["mc_dropout", "ensemble"]
    assert data.shift(data.condition("chitchat", "bm25"), "chitchat") == "in distribution"
    assert data.shift(data.condition("chatterbot", "random"), "chitchat") == "cross-domain + cross-NS"


# ------------------------------------------------------------------------------ subsetting
def _indexed_pred(seed: int = 3) -> Predictions:
    """probs encode the candidate index, so a subset shows which candidates it kept."""
    labels = _labels(8, K, seed)
    probs = np.tile(np.arange(K) / 100 + 0.01, (8, 1))
    return Predictions(qids=[f"q{i}" for i in range(8)], labels=labels, probs=probs, samples=probs[None])


def test_subset_negatives_is_nested_and_keeps_the_relevant():
    pred = _indexed_pred()
    kept_before = None
    for n in range(1, K):
        sub = st.subset_negatives(pred, n, seed=7)
        assert sub.labels.shape == (8, n + 1) and (sub.labels.sum(axis=1) == 1).all()
        kept = [set(np.round(row * 100 - 1).astype(int)) for row in sub.probs]
        rel = np.argmax(pred.labels, axis=1)
        assert all(int(r) in k for r, k in zip(rel, kept))
        if kept_before is not None:
            assert all(a <= b for a, b in zip(kept_before, kept))  # nested in n
        kept_before = kept
    full = st.subset_negatives(pred, K - 1, seed=7)
    np.testing.assert_array_equal(full.probs, pred.probs)  # K - 1 negatives: the whole query, same order
    np.testing.assert_array_equal(full.labels, pred.labels)


def test_balanced_set_is_seeded_and_paired_across_rankers():
    pred = _indexed_pred()
    a = st.subset_negatives(pred, 1, seed=11)
    b = st.subset_negatives(pred, 1, seed=11)
    np.testing.assert_array_equal(a.probs, b.probs)
    other = Predictions(
        qids=pred.qids, labels=pred.labels, probs=pred.probs[:, ::-1].copy(), samples=pred.probs[None, :, ::-1].copy()
    )
    c = st.subset_negatives(other, 1, seed=11)
    np.testing.assert_array_equal(c.labels, a.labels)  # same candidate positions for any ranker
    draws = {tuple(st.subset_negatives(pred, 1, seed=s).probs.ravel()) for s in range(5)}
    assert len(draws) > 1
    with pytest.raises(ValueError, match="only 9 negatives"):
        st.subset_negatives(pred, K, seed=0)


# ------------------------------------------------------------------------------ tables
def test_table1_matches_hand_computation(study):
    t1 = st.table1(study)
    assert len(t1) == 6 and list(t1.columns[:4]) == ["train_corpus", "corpus", "sampler", "shift"]
    assert (t1["R10@1"] == 1.0).all()
    # balanced: pairs (0.9, 1) and (0.35, 0): ECE = (0.1 + 0.35) / 2; all ten: (0.1 + 9 * 0.35) / 10
    np.testing.assert_allclose(t1["ECE 1:1"], 0.225, atol=1e-12)
    np.testing.assert_allclose(t1["ECE 1:9"], 0.325, atol=1e-12)
    # every bucket holds one label only: no sampling noise, so the debiased ECE is eq. 1 and the bias 0
    np.testing.assert_allclose(t1["ECE 1:1 debiased"], 0.225, atol=1e-12)
    np.testing.assert_allclose(t1["ECE 1:9 bias"], 0.0, atol=1e-12)
    assert (
        (t1["ECE 1:1 debiased lo"] <= t1["ECE 1:1 debiased"]) & (t1["ECE 1:1 debiased"] <= t1["ECE 1:1 debiased hi"])
    ).all()
    assert (t1["shift"] == "in distribution").sum() == 1 and (t1["seeds"] == 1).all()
    wide = st.table1_wide(t1)
    # per condition: R10@1, both ECEs with their debiased value and bias, and three seed spreads
    assert wide.shape == (1, 6 * 10) and not wide.isna().any().any()
    # the synthetic ensemble's two members are the same model: no spread
    assert (wide.xs("R10@1 seed spread", axis=1, level=1) == "1.000–1.000 (sd 0.000, 2 seeds)").all().all()


def test_table1_is_the_papers_train_by_test_matrix_and_shift_claims_are_paired_per_test_corpus(tmp_root):
    from calibrank.study.analysis import verdicts

    data = st.load_study(write_synthetic_study(tmp_root, train_corpora=("chitchat", "chatterbot"), domain_drop=True))
    t1 = st.table1(data)
    assert len(t1) == 2 * 6 and (t1["shift"] == "in distribution").sum() == 2
    wide = st.table1_wide(t1)
    assert list(wide.index) == ["bert trained on chitchat", "bert trained on chatterbot"]
    assert wide.shape == (2, 6 * 10) and not wide.isna().any().any()
    # on chitchat's queries: 1.000 trained there, 0.000 trained on chatterbot (relevant at 0.3 below 0.35)
    assert wide.loc["bert trained on chitchat", ("chitchat · bm25", "R10@1")].startswith("1.000")
    assert wide.loc["bert trained on chatterbot", ("chitchat · bm25", "R10@1")].startswith("0.000")
    claims = verdicts.summary(verdicts.calibration_claims(data))
    cross = claims[claims["claim"].str.contains("cross-domain")]
    assert len(cross) == 2 * 2  # per test corpus: R@1 and balanced ECE
    assert cross["test"].str.startswith("paired permutation test").all()
    r1 = cross[cross["claim"].str.contains("R@1")]
    assert (r1["ours"] == -1.0).all() and (r1["verdict"] == "replicates").all() and (r1["power"] == "").all()
    assert set(r1["claim"].str.extract(r"tested on (\w+)")[0]) == {"chitchat", "chatterbot"}
    # cross-NS: one model on its own corpus, unchanged (bert ignores the sampler): effect 0, no power text missing
    ns = claims[claims["claim"].str.contains("cross-NS")]
    assert len(ns) == 2 * 2 and (ns["ours"] == 0).all()
    assert ns["power"].str.match(r"(no effect larger than|underpowered: the paper's effect)").all()


def _ensemble_of_three(cfg) -> None:
    """Rewrite the synthetic ensemble's Predictions with three members that differ: each gives the relevant
    candidate 0.8 and every negative 0.2, except that member i gives the relevant candidate 0.1 (below every
    negative) on its first 3i queries."""
    for cond in ranker_conditions(cfg, "ensemble"):
        for tc in ("chitchat",):
            path = predictions_path(cfg, "ensemble", tc, cond, 0)
            old = Predictions.load(path)
            members = np.stack([0.2 + 0.6 * old.labels.astype(float)] * 3)
            for i in range(3):
                members[i, : 3 * i][old.labels[: 3 * i] == 1] = 0.1
            Predictions(
                qids=old.qids, labels=old.labels, probs=members.mean(axis=0), samples=members, meta=dict(old.meta)
            ).save(path)


def test_seed_spread_reads_berts_training_seeds_from_the_ensembles_members(tmp_root):
    cfg = write_synthetic_study(tmp_root)
    _ensemble_of_three(cfg)
    data = st.load_study(cfg)
    spread = st.seed_spread(data)
    assert len(spread) == 6 and (spread["seed models"] == 3).all() and (spread["training seeds"] == 1).all()
    # R@1 per member: 12/12, 9/12, 6/12 (ties and the dropped relevant count against it)
    np.testing.assert_allclose(spread[["R@1 seed min", "R@1 seed max", "R@1 seed sd"]], [[0.5, 1.0, 0.25]] * 6)
    # ECE on all 120 pairs: 0.2; (3 * 0.9 + 9 * 0.2 + 108 * 0.2) / 120; (6 * 0.9 + 6 * 0.2 + 108 * 0.2) / 120
    full = [0.2, 26.1 / 120, 28.2 / 120]
    np.testing.assert_allclose(
        spread[["ECE seed min", "ECE seed max", "ECE seed sd"]], [[0.2, 0.235, np.std(full, ddof=1)]] * 6, atol=1e-12
    )
    # balanced (the relevant and one negative): (3 * 0.9 + 9 * 0.2 + 12 * 0.2) / 24 and (6 * 0.9 + 6 * 0.2 + 12 * 0.2) / 24
    balanced = [0.2, 6.9 / 24, 9.0 / 24]
    np.testing.assert_allclose(
        spread[["ECE 1:1 seed min", "ECE 1:1 seed max", "ECE 1:1 seed sd"]],
        [[0.2, 0.375, np.std(balanced, ddof=1)]] * 6,
        atol=1e-12,
    )

    t1 = st.table1(data)
    np.testing.assert_allclose(t1["R10@1 seed min"], 0.5) and np.testing.assert_allclose(t1["ECE 1:9 seed max"], 0.235)
    assert (t1["seed models"] == 3).all()
    # bert's own columns are those of the table without a spread: the spread is beside them, not in them
    plain = st.table1(data, spread=spread.iloc[:0])
    assert (
        plain["seed models"].eq(0).all() and plain.filter(like="seed m").drop(columns="seed models").isna().all().all()
    )
    pd.testing.assert_frame_equal(t1[plain.columns[:-10]], plain[plain.columns[:-10]])
    wide = st.table1_wide(t1)
    row = wide.loc["bert trained on chitchat", "chitchat · bm25"]
    assert list(row.index) == [
        "R10@1",
        "R10@1 seed spread",
        "ECE 1:1",
        "ECE 1:1 debiased",
        "ECE 1:1 seed spread",
        "ECE 1:1 bias",
        "ECE 1:9",
        "ECE 1:9 debiased",
        "ECE 1:9 seed spread",
        "ECE 1:9 bias",
    ]
    assert row["R10@1 seed spread"] == "0.500–1.000 (sd 0.250, 3 seeds)"
    assert re.fullmatch(r"0\.200–0\.235 \(sd 0\.01[78], 3 seeds\)", row["ECE 1:9 seed spread"])  # sd 0.0175

    layout = st.paper2023_tables(data, st.interval_table(data, n_resamples=200))["in-domain"].set_index("ranker")
    assert layout.loc["bert", "seed spread"] == "R10@1 0.500–1.000, ECE 0.200–0.235 (3 seeds)"
    # Table 2: beside each change over bert, how far bert's balanced ECE moves with the seed alone
    t2 = st.table2(data, n_resamples=200)
    np.testing.assert_allclose(t2["ECE 1:1 seed range (bert)"], 0.375 - 0.2)
    np.testing.assert_allclose(st.table2(data, ece_column="ECE", n_resamples=200)["ECE seed range (bert)"], 0.235 - 0.2)
    assert (layout.drop(index="bert")["seed spread"] == "").all()


def test_seed_spread_pools_the_members_of_every_training_seed(tmp_root):
    data = st.load_study(write_synthetic_study(tmp_root, seeds=(0, 1), seed_shift=0.05))
    spread = st.seed_spread(data)
    assert (spread["seed models"] == 4).all() and (spread["training seeds"] == 2).all()
    # each seed's two members are alike; seed 1 moves the negatives up by 2 * 0.05 * (1 + ci % 3): the ECEs differ
    assert (spread["ECE seed max"] > spread["ECE seed min"]).all() and (spread["R@1 seed min"] == 1).all()


def test_without_an_ensemble_table1_says_there_is_no_seed_spread(tmp_root):
    write_synthetic_study(tmp_root, rankers=("bert", "temperature"))
    data = st.load_study(synthetic_config(rankers=("bert", "temperature")))
    assert st.seed_spread(data).empty
    t1 = st.table1(data)
    assert (t1["seed models"] == 0).all() and t1["R10@1 seed min"].isna().all()
    wide = st.table1_wide(t1)
    assert (wide.xs("ECE 1:1 seed spread", axis=1, level=1) == "").all().all() and not wide.isna().any().any()
    layout = st.paper2023_tables(data, st.interval_table(data, n_resamples=200))["in-domain"]
    assert (layout["seed spread"] == "").all()
    assert st.table2(data, n_resamples=200)["ECE 1:1 seed range (bert)"].isna().all()


def test_ties_count_against_the_relevant(study):
    m = st.metrics_table(study)
    tied = m[m["ranker"] == "temperature"]
    assert (tied["R@1"] == 0).all()  # every candidate at 0.5: the relevant one is ranked last
    np.testing.assert_allclose(tied["ECE 1:1"], 0.0, atol=1e-12)  # 0.5 predicted, half relevant
    np.testing.assert_allclose(tied["ECE"], 0.4, atol=1e-12)


def test_table2_gives_intervals_and_one_sided_tests(study):
    t2 = st.table2(study)
    assert len(t2) == 3 * 6 and set(t2["ranker"]) == {"mc_dropout", "ensemble", "temperature"}
    # the two one-sided p-values of a row are the two tails of one null distribution: they add up to at least 1
    assert (t2["pvalue"] + t2["pvalue_worse"] >= 1 - 1e-12).all()
    assert ((t2["lo"] <= t2["change"] + 1e-12) & (t2["change"] <= t2["hi"] + 1e-12)).all()
    ens = t2[t2["ranker"] == "ensemble"]
    # ensemble: (0.8, 1) and (0.2, 0): balanced ECE 0.2 against bert's 0.225 (one label per bucket: debiased = eq. 1)
    np.testing.assert_allclose(ens["rel_change"], (0.2 - 0.225) / 0.225, atol=1e-12)
    np.testing.assert_allclose(ens["change"], 0.2 - 0.225, atol=1e-12)
    assert not st.table2_wide(t2).isna().any().any()
    # temperature (0.5 everywhere): balanced ECE 0 against 0.225, lower on every query -> significant improvement;
    # its one bucket holds half relevant pairs, so the debiased ECE is 0 - E|N(0, 0.25 / 24)| < 0
    temp = t2[t2["ranker"] == "temperature"]
    assert (temp["mark"] == "†").all() and temp["significance"].str.endswith("†").all()
    np.testing.assert_allclose(temp["change"], -np.sqrt(2 / np.pi) * np.sqrt(0.25 / (2 * Q)) - 0.225, atol=1e-12)
    assert st.table2_wide(t2).loc[("chitchat", "temperature")].str.match(r"-100.0% · -0\.3\d\d \[.*\] †").all()


def test_a_significant_rise_is_marked_worse_not_dagger(study):
    t2 = st.table2(
        study, ece_column="ECE"
    )  # all ten candidates: temperature's 0.5 everywhere is far worse (0.4 vs 0.325)
    temp = t2[t2["ranker"] == "temperature"]
    assert (temp["rel_change"] > 0).all() and (temp["change"] > 0).all() and (temp["mark"] == "worse").all()
    assert temp["significance"].str.startswith("p(worse) = ").all()


def test_table2_with_several_seeds_covers_them(tmp_root):
    data = st.load_study(write_synthetic_study(tmp_root, seeds=(0, 1, 2), seed_shift=0.02))
    m = st.metrics_table(data)
    t2 = st.table2(data)
    ens = t2[t2["ranker"] == "ensemble"]
    assert (ens["seeds"] == 3).all() and (ens["pvalue"] + ens["pvalue_worse"] >= 1 - 1e-12).all()
    # the seeds' shifts move every query of a condition alike: the small p-value is on the side of the effect's sign
    assert set(np.sign(ens["rel_change"])) == {-1.0, 1.0}  # both sides occur (the seeds' shifts differ by condition)
    assert (ens.loc[ens["rel_change"] < 0, "pvalue"] < 0.01).all() and (
        ens.loc[ens["rel_change"] > 0, "pvalue_worse"] < 0.01
    ).all()
    row = ens.iloc[0]
    key = (m["corpus"] == row["corpus"]) & (m["sampler"] == row["sampler"])
    a = m[key & (m["ranker"] == "ensemble")]["ECE 1:1"].mean()
    b = m[key & (m["ranker"] == "bert")]["ECE 1:1"].mean()
    assert math.isclose(row["rel_change"], (a - b) / b, rel_tol=1e-9)
    iv = st.interval_table(data, rankers=["ensemble"])
    assert (iv["seeds"] == 3).all() and iv["intervals"].str.startswith("3 training seeds").all()


def test_significance_texts():
    assert st.significance_text(0.01, 1.0, "†") == "p = 0.01 †"
    assert st.significance_text(0.9, 0.01, "worse") == "p(worse) = 0.01 worse"
    assert st.significance_text(0.2, 0.8, "") == "p = 0.2"
    assert st.significance_text(float("nan"), float("nan"), "", "zero variance") == "no test: zero variance"


def test_figure2_subsets_grow_to_the_full_query(study):
    f2 = st.ece_by_negatives(study)
    assert len(f2) == 4 * 6 * (K - 1)
    assert (f2["pairs"] == Q * (f2["n_nonrel"] + 1)).all()
    bert = f2[f2["ranker"] == "bert"]
    n = bert["n_nonrel"].to_numpy()
    np.testing.assert_allclose(bert["ECE"], (0.1 + 0.35 * n) / (n + 1), atol=1e-12)  # hand: bucket-weighted gaps
    m = st.metrics_table(study)
    for ranker in ("mc_dropout", "ensemble"):
        sub = f2[f2["ranker"] == ranker]
        own = m[m["ranker"] == ranker]
        np.testing.assert_allclose(sub.loc[sub["n_nonrel"] == K - 1, "ECE"], own["ECE"], atol=1e-12)
        np.testing.assert_allclose(sub.loc[sub["n_nonrel"] == 1, "ECE"], own["ECE 1:1"], atol=1e-12)


def test_reliability_table_counts(study):
    rel = st.reliability_table(study)
    assert len(rel) == 4 * 10
    assert (rel.groupby("ranker")["count"].sum() == Q * K).all()
    bert = rel[(rel["ranker"] == "bert") & (rel["count"] > 0)]
    assert bert["count"].tolist() == [Q * (K - 1), Q] and bert["fraction_positive"].tolist() == [0.0, 1.0]


def test_paper2023_tables_show_intervals_and_protocol(study):
    t = st.paper2023_tables(study, st.interval_table(study))
    assert len(t["in-domain"]) == 4 and len(t["shift"]) == 4
    assert t["in-domain"]["R10@1"].str.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]").all()
    assert (t["in-domain"]["test on"] == "chitchat").all() and (t["shift"]["test on"] == "chatterbot").all()
    assert t["in-domain"]["protocol"].str.contains("1 positive \\+ 1 bm25 negative").all()
    assert list(st.display_columns(t["in-domain"]).columns) == [
        "train on",
        "test on",
        "ranker",
        "R10@1",
        "MAP",
        "ECE",
        "ECE debiased",
        "ECE bias",
        "seeds",
        "seed spread",
        "protocol",
    ]
    assert t["in-domain"]["ECE debiased"].str.fullmatch(r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]").all()
    # the numbers behind the text are numbers
    iv = st.interval_table(study).set_index(["train_corpus", "corpus", "ranker", "sampler"])
    for _, row in t["in-domain"].iterrows():
        ref = iv.loc[(row["train on"], row["test on"], row["ranker"], st.paper2023_sampler(study))]
        for c in ("R@1", "MAP", "ECE debiased"):
            assert row[f"{c} mean"] == pytest.approx(ref[c]) and row[f"{c} lo"] <= row[f"{c} mean"] <= row[f"{c} hi"]


def test_risk_and_nota_tables_cover_the_stochastic_rankers(study):
    sweep = st.risk_sweep(study, [0.0, 0.5, 1.0])
    assert len(sweep) == 2 * 6 * 3 and set(sweep["ranker"]) == {"mc_dropout", "ensemble"}
    t3 = st.table3(study, [0.0, 0.5, 1.0])
    assert len(t3) == 2 * 6
    # the ensemble's two members are identical: variance 0, so the risk-aware score is the mean score for any b
    ens = t3[t3["ranker"] == "ensemble"]
    assert (ens["rel_change"] == 0).all() and (ens["pvalue"] == 1).all() and (ens["pvalue_worse"] == 1).all()
    assert (t3["b_from"] == "chitchat · bm25 (valid)").all()  # b from the training condition by default
    target = st.table3(study, [0.0, 0.5, 1.0], b_from="target")
    assert (target["b_from"] == target["corpus"] + " · " + target["sampler"] + " (valid)").all()
    with pytest.raises(ValueError, match="b_from"):
        st.table3(study, b_from="test")
    nt = st.nota_table(study, n_estimators=5)
    assert set(nt["input"]) == {"E[R]", "+var[mc_dropout]", "+var[ensemble]"}
    assert set(nt["table"]) == {"Table 4 (cross-domain)", "Table 5 (cross-NS)"} and len(nt) == 4 * 3
    assert st.nota_wide(nt).shape == (4, 3)
    # each input's change is relative to the E[R] row of its own condition
    base = nt[nt["input"] == "E[R]"].set_index(["table", "corpus", "sampler"])["f1_mean"]
    for _, r in nt.iterrows():
        assert r["rel_change"] == pytest.approx(r["f1_mean"] / base[(r["table"], r["corpus"], r["sampler"])] - 1)
    assert ((nt["f1_lo"] <= nt["f1_mean"]) & (nt["f1_mean"] <= nt["f1_hi"])).all()
    assert set(nt["mark"]) <= {"†", "worse", ""}


# ------------------------------------------------------------------------------ files
def test_export_tables_and_trec_runs(study, tmp_root):
    t1 = st.table1(study)
    paths = st.export_tables("smoke", {"table1_bert": t1, "wide": st.table1_wide(t1)}, notebook="04_calibration")
    back = pd.read_csv(paths["table1_bert"])
    assert back.shape == t1.shape and list(back.columns) == list(t1.columns)
    assert pd.read_csv(paths["wide"]).shape[0] == 1
    assert (tmp_root / "reports" / "smoke" / "tables" / "04_calibration.json").exists()
    assert set(st.load_exported_tables("smoke")) == {"table1_bert", "wide"}

    files = st.write_trec_runs(study)
    assert (files["kind"] == "run").sum() == 4 * 6 and (files["kind"] == "qrels").sum() == 6
    run = Path(files.loc[files["kind"] == "run", "path"].iloc[0])
    rows = [line.split() for line in run.read_text().splitlines()]
    assert len(rows) == Q * K and all(len(r) == 6 and r[1] == "Q0" for r in rows)
    by_q = pd.DataFrame(rows, columns=["qid", "q0", "docid", "rank", "score", "run"]).astype(
        {"rank": int, "score": float}
    )
    assert (by_q.groupby("qid")["rank"].apply(sorted).apply(lambda r: r == list(range(1, K + 1)))).all()
    assert (by_q.groupby("qid")["score"].apply(lambda s: s.is_monotonic_decreasing)).all()
    qrels = Path(files.loc[files["kind"] == "qrels", "path"].iloc[0]).read_text().splitlines()
    assert len(qrels) == Q * K and sum(int(line.split()[3]) for line in qrels) == Q
    tied = Path(files.loc[(files["run"] == "temperature-chitchat"), "path"].iloc[0]).read_text().splitlines()
    relevant = {line.split()[2] for line in qrels if line.endswith(" 1")}
    ranks = [int(line.split()[3]) for line in tied if line.split()[2] in relevant]
    assert ranks == [K] * Q  # all tied: the relevant candidate is ranked last


# ------------------------------------------------------------------------------ comparisons
def test_paper_numbers_beside_ours(study):
    tables = {
        "table1_bert": st.table1(study),
        "table2_ece_change": st.table2(study),
        "figure2_ece_by_negatives": st.ece_by_negatives(study),
        "table3_risk_aware": st.table3(study, [0.0, 0.5]),
        "paper2023_in_domain": st.paper2023_tables(study, st.interval_table(study))["in-domain"],
        "efficiency": efficiency_table(
            pd.DataFrame(
                {"ranker": ["bert", "mc_dropout", "ensemble"], "parameters": [10, 10, 20], "ms/query": [1.0, 3.0, 2.0]}
            )
        ),
    }
    comp = st.paper_comparison(tables)
    t1 = comp["table1"].set_index("condition")
    assert math.isclose(t1.loc["in distribution", "R10@1 (paper)"], (0.615 + 0.652 + 0.834) / 3)
    assert math.isclose(t1.loc["in distribution", "ECE 1:1 (ours)"], 0.225)
    t2 = comp["table2"].set_index("ranker")
    assert -0.15 < t2.loc["ensemble", "mean ECE change (paper)"] < -0.13  # the paper's "14% better"
    assert -0.11 < t2.loc["mc_dropout", "mean ECE change (paper)"] < -0.09  # and "10%"
    assert math.isnan(t2.loc["temperature", "mean ECE change (paper)"])
    ours = comp["in_domain_2023"].set_index("ranker")
    mine = tables["paper2023_in_domain"].groupby("ranker")[["R@1 mean", "MAP mean", "ECE mean"]].mean()
    for col, ref in (("R10@1 (ours)", "R@1 mean"), ("MAP (ours)", "MAP mean"), ("ECE (ours)", "ECE mean")):
        assert np.allclose(ours.loc[mine.index, col], mine[ref])  # numbers, none lost to text


def test_efficiency_table_ratios():
    measured = pd.DataFrame(
        {"ranker": ["bert", "mc_dropout", "sngp"], "parameters": [100, 100, 110], "ms/query": [2.0, 10.0, 2.5]}
    )
    t = efficiency_table(measured)
    assert t["ratio_to_bert"].tolist() == [1.0, 5.0, 1.25]
    assert t.loc[t["ranker"] == "mc_dropout", "PG-DRR ms"].iloc[0] == 111.28
    assert t.loc[t["ranker"] == "mc_dropout", "GPF-BERT ratio"].iloc[0] == 9.56
    assert math.isclose(PAPER_EFFICIENCY.set_index("ranker").loc["pg_drr", "PG-DRR ratio"], 17.09 / 11.48)


# ------------------------------------------------------------------------------ verdicts
def test_claims_on_the_synthetic_study(study):
    from calibrank.study.analysis import verdicts

    claims = verdicts.summary({"c4": verdicts.calibration_claims(study), "c5": verdicts.risk_claims(study)})
    by = {(c, m): v for c, m, v in zip(claims["claim"], claims["method"], claims["verdict"])}
    # bert's ECE: (0.1 + 0.35 n) / (n + 1) grows from 0.225 to 0.325 on every query
    assert (
        by[("bert's ECE (debiased) grows as non-relevant candidates are added (1 + 9 against 1 + 1)", "bert")]
        == "replicates"
    )
    # one row per method the first paper made its claims for, never pooled
    table2_rows = claims[claims["paper"].str.endswith("Table 2")]
    assert sorted(table2_rows["method"]) == ["ensemble", "mc_dropout"]
    assert sorted(claims.loc[claims["paper"].str.endswith("Table 3"), "method"]) == ["ensemble", "mc_dropout"]
    # bert's predictions do not depend on the condition (one seed, no shift): every Table 1 effect is exactly 0,
    # which is not the claimed direction and, being 0, cannot contradict it (cross-NS for R@1 and ECE)
    table1 = claims[claims["paper"].str.endswith("Table 1")]
    tested = table1[table1["verdict"] != "not tested"]
    assert len(tested) == 2 and (tested["ours"] == 0).all()
    assert (tested["verdict"] == "opposite direction, not significant").all()
    assert tested["power"].str.match(r"(no effect larger than|underpowered: the paper's effect)").all()
    # one training corpus: no model trained elsewhere, so the cross-domain claims keep their rows, not tested, saying why
    untested = table1[table1["verdict"] == "not tested"]
    assert len(untested) == 2 and untested["claim"].str.contains("cross-domain").all()
    assert untested["note"].str.startswith("not tested: rankers.train_corpora lists chitchat only").all()
    assert (untested["conditions"] == 0).all() and untested["ours"].isna().all() and (untested["power"] == "").all()
    assert untested["paper effect"].notna().all()  # the paper's effect still stands beside it
    assert claims.loc[claims["verdict"] != "not tested", "conditions"].ge(1).all()
    # ensemble (0.8 / 0.2) against bert (0.9 / 0.35): balanced ECE 0.2 vs 0.225 on every condition, a difference
    ens = table2_rows.set_index("method").loc["ensemble"]
    assert ens["ours"] == pytest.approx(0.2 - 0.225) and ens["verdict"] == "replicates" and ens["unit"] == "difference"
    assert ens["power"] == "" and ens["detectable"] >= 0
    # its two members are identical: the risk-aware ranker is the mean ranker, no change at all
    ens3 = claims[claims["paper"].str.endswith("Table 3") & (claims["method"] == "ensemble")].iloc[0]
    assert ens3["ours"] == 0 and ens3["verdict"] == "opposite direction, not significant"
    assert claims["protocol"].str.contains("1 BM25 negative per positive").all()


def test_the_analysis_layer_does_not_import_torch():
    import subprocess
    import sys

    modules = [
        "calibrank.study.analysis.study",
        "calibrank.study.analysis.practice",
        "calibrank.study.analysis.efficiency",
    ] + [
        f"calibrank.study.analysis.{m}"
        for m in (
            "load",
            "calibration",
            "risk_aware",
            "nota_tables",
            "papers",
            "verdicts",
            "exports",
            "uncertainty",
            "subsets",
            "explore",
        )
    ]
    code = f"import sys, {', '.join(modules)}; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_efficiency_ratios_over_repeats_and_their_claims():
    from calibrank.study.analysis import verdicts

    measured = pd.DataFrame(
        {
            "ranker": ["bert", "mc_dropout", "sngp"],
            "parameters": [100, 100, 110],
            "ms/query": [2.0, 10.0, 2.5],
            "ms/query per repeat": ["2 2.1 1.9", "10 10.4 9.6", "2.5 2.6 2.4"],
        }
    )
    t = efficiency_table(measured).set_index("ranker")
    ratios = np.array([10 / 2, 10.4 / 2.1, 9.6 / 1.9])
    half = stats.t.ppf(0.975, 2) * ratios.std(ddof=1) / math.sqrt(3)
    assert (t.loc["mc_dropout", "ratio lo"], t.loc["mc_dropout", "ratio hi"]) == pytest.approx(
        (ratios.mean() - half, ratios.mean() + half)
    )
    assert t.loc["mc_dropout", "repeats"] == 3
    claims = verdicts.summary(verdicts.efficiency_claims(t.reset_index())).set_index("method")
    assert claims.loc["mc_dropout", "verdict"] == "replicates"  # ~5x bert on every repeat
    assert claims.loc["sngp", "verdict"] == "replicates"  # 1.25x against MC Dropout's 5x
    assert claims.loc["mc_dropout", "ours"] == pytest.approx(ratios.mean() - 1)
    one = efficiency_table(measured.assign(**{"ms/query per repeat": ["2", "10", "2.5"]}))
    assert one["ratio lo"].isna().all() and verdicts.efficiency_claims(one)["note"].str.startswith("no test").all()


# ------------------------------------------------------------------------------ what is compared
def _edit_sidecar(path: Path, **changes) -> None:
    side = path.with_suffix(".json")
    meta = json.loads(side.read_text(encoding="utf-8"))
    meta.update(changes)
    side.write_text(json.dumps(meta), encoding="utf-8")


def test_rankers_on_different_data_are_refused_naming_both_files(tmp_root):
    cfg = write_synthetic_study(tmp_root)
    cond = next(c for c in eval_conditions(cfg) if c.split == "test")
    for ranker, digest in (("bert", "aaaa"), ("ensemble", "bbbb"), ("mc_dropout", "aaaa"), ("temperature", "aaaa")):
        for c in eval_conditions(cfg):
            path = predictions_path(cfg, ranker, "chitchat", c)
            if path.exists():
                _edit_sidecar(path, data_hash=digest)
    data = st.load_study(cfg)
    bert, ens = (str(predictions_path(cfg, r, "chitchat", cond)) for r in ("bert", "ensemble"))
    with pytest.raises(
        PredictionsError, match=rf"{re.escape(ens)} and {re.escape(bert)} were computed on different data"
    ):
        st.table2(data)  # notebook 04
    with pytest.raises(
        PredictionsError, match=rf"{re.escape(ens)} and {re.escape(bert)} were computed on different data"
    ):
        st.risk_sweep(data, [0.0, 0.5])  # notebook 05: Figure 3 sets each ranker beside bert
    valid = next(c for c in eval_conditions(cfg) if c.split == "valid")
    _edit_sidecar(predictions_path(cfg, "mc_dropout", "chitchat", valid), data_hash="cccc")
    st.table3(st.load_study(cfg), [0.0, 0.5])  # notebook 05 compares a ranker with itself: test files agree


def test_a_sidecar_seed_that_disagrees_with_the_file_name_is_an_error(tmp_root):
    cfg = write_synthetic_study(tmp_root, seeds=(0, 1))
    cond = next(c for c in eval_conditions(cfg) if c.split == "test")
    path = predictions_path(cfg, "bert", "chitchat", cond, 1)
    _edit_sidecar(path, seed=7)
    with pytest.raises(
        PredictionsError, match=rf"{re.escape(str(path))}: its sidecar says seed 7 but its name says seed 1"
    ):
        st.load_study(cfg).runs("bert", "chitchat", cond)
