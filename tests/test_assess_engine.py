"""The assessment engine: trec_eval's numbers, the study's numbers on a study Predictions, padding that never counts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")


import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, RR, P, R, nDCG

from calibrank.assess.engine import Assessment, assess
from calibrank.assess.page import figures
from calibrank.assess.read.load import load
from calibrank.assess.read.scored import AssessError, ScoredRun
from calibrank.assess.read.trec import read_runs
from calibrank.assess.sections.ranking import per_query
from calibrank.assess.sections.reliability import NO_SCALE
from calibrank.assess.sections.selfcheck import checked
from calibrank.methods.conformal import conformal_quantile, prediction_sets, true_scores
from calibrank.methods.listwise import candidate_distribution
from calibrank.methods.selective import confidences, selective_scores
from calibrank.metrics.calibration import brier, ece
from calibrank.metrics.ranking import rank_of_relevant, recall_at_k
from calibrank.predictions import Predictions

FAST = {"n_resamples": 200}


# ------------------------------------------------------------------------------ helpers
def run_from_frames(
    run: pd.DataFrame, qrels: pd.DataFrame, *, kind: str = "score", relevant_at: int = 1, source: str = "run"
) -> ScoredRun:
    """A ScoredRun from a TREC-style run (query_id, doc_id, score) and qrels (query_id, doc_id, relevance)."""
    qids = list(dict.fromkeys(run["query_id"]))
    groups = {q: g for q, g in run.groupby("query_id", sort=False)}
    k = max(len(g) for g in groups.values())
    judged = {(r.query_id, r.doc_id): int(r.relevance) for r in qrels.itertuples()}
    n_q = len(qids)
    docids = np.full((n_q, k), "", dtype=object)
    scores = np.zeros((1, n_q, k))
    rel = np.zeros((n_q, k), dtype=int)
    jud = np.zeros((n_q, k), dtype=bool)
    mask = np.zeros((n_q, k), dtype=bool)
    for i, q in enumerate(qids):
        g = groups[q]
        n = len(g)
        mask[i, :n] = True
        docids[i, :n] = g["doc_id"].to_numpy()
        scores[0, i, :n] = g["score"].to_numpy()
        for j, d in enumerate(g["doc_id"]):
            jud[i, j] = (q, d) in judged
            rel[i, j] = judged.get((q, d), 0)
    n_rel = np.array([int(((qrels["query_id"] == q) & (qrels["relevance"] >= relevant_at)).sum()) for q in qids])
    return ScoredRun(
        np.array(qids),
        docids.astype(str),
        mask,
        scores,
        rel,
        jud,
        n_rel,
        kind=kind,
        relevant_at=relevant_at,
        source=source,
    )


def synthetic(
    q: int, *, seed: int, prefix: str, kind: str = "probability", s: int = 1, kmax: int = 25, nota: float = 0.1
) -> ScoredRun:
    """Ragged lists, grades 0-2, a share of queries without a relevant candidate, scores that track the grade."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, kmax + 1, q)
    k = int(lengths.max())
    mask = np.arange(k)[None] < lengths[:, None]
    rel = np.where(mask, rng.choice([0, 0, 0, 0, 1, 2], size=(q, k)), 0)
    rel[rng.random(q) < nota] = 0
    z = rng.normal(-2.0, 1.0, (q, k)) + 1.5 * rel
    scores = z[None] + 0.3 * rng.normal(size=(s, q, k))
    if kind == "probability":
        scores = 1.0 / (1.0 + np.exp(-scores))
    docids = np.char.add("d", np.arange(q * k).reshape(q, k).astype(str))
    n_rel = (rel >= 1).sum(axis=1)
    return ScoredRun(
        np.array([f"{prefix}{i}" for i in range(q)]),
        docids,
        mask,
        np.where(mask[None], scores, 0.0),
        rel,
        mask.copy(),
        n_rel,
        kind=kind,
        source=prefix,
    )


def padded(run: ScoredRun, extra: int) -> ScoredRun:
    """``run`` with ``extra`` more empty slots per query."""
    pad = lambda a, v: np.concatenate([a, np.full(a.shape[:-1] + (extra,), v, dtype=a.dtype)], axis=-1)  # noqa: E731
    return ScoredRun(
        run.qids,
        pad(run.docids, ""),
        pad(run.mask, False),
        pad(run.scores, 0.0),
        pad(run.relevance, 0),
        pad(run.judged, False),
        run.n_relevant,
        run.kind,
        run.relevant_at,
        run.source,
    )


def study_predictions(q: int, k: int, seed: int, prefix: str) -> Predictions:
    """Rectangular study-style Predictions: one relevant of k candidates, S = 1."""
    rng = np.random.default_rng(seed)
    labels = np.zeros((q, k), dtype=int)
    labels[np.arange(q), rng.integers(0, k, q)] = 1
    probs = 1.0 / (1.0 + np.exp(-(rng.normal(-1.5, 1.2, (q, k)) + 2.0 * labels)))
    return Predictions(np.array([f"{prefix}{i}" for i in range(q)]), labels, probs, probs[None])


def as_scored(pred: Predictions) -> ScoredRun:
    q, k = pred.labels.shape
    docids = np.char.add(np.char.add(pred.qids[:, None].astype(str), "-"), np.arange(k).astype(str)[None])
    return ScoredRun(
        pred.qids,
        docids,
        np.ones((q, k), bool),
        pred.samples,
        pred.labels,
        np.ones((q, k), bool),
        pred.labels.sum(axis=1),
        kind="probability",
    )


# ------------------------------------------------------------------------------ ranking = trec_eval
@pytest.fixture(scope="module")
def trec_pair():
    """A tie-free run with ragged lists, graded qrels, relevant documents the run misses, and one query whose
    qrels hold no relevant document."""
    rng = np.random.default_rng(7)
    run_rows, qrel_rows = [], []
    for i in range(40):
        q = f"q{i}"
        n = int(rng.integers(2, 30))
        for j in range(n):
            grade = int(rng.choice([0, 0, 0, 1, 2, 3])) if i != 0 else 0
            run_rows.append((q, f"{q}d{j}", float(rng.normal() + 0.8 * grade)))
            if rng.random() < 0.9 or grade:
                qrel_rows.append((q, f"{q}d{j}", grade))
        if i != 0:
            for j in range(int(rng.integers(0, 3))):  # relevant, never retrieved (grade 1 = relevant_at)
                qrel_rows.append((q, f"{q}missing{j}", 1))
            if not any(r[0] == q and r[2] > 0 for r in qrel_rows):
                qrel_rows.append((q, f"{q}missing-extra", 1))
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(qrel_rows, columns=["query_id", "doc_id", "relevance"])
    assert not run.duplicated(["query_id", "score"]).any()  # tie-free
    return run, qrels


def test_ranking_measures_equal_ir_measures_on_a_ragged_graded_run(trec_pair):
    run, qrels = trec_pair
    scored = run_from_frames(run, qrels)
    assert scored.mask.sum(axis=1).min() < scored.mask.shape[1]  # ragged
    answerable = [q for q in scored.qids if (qrels[qrels["query_id"] == q]["relevance"] > 0).any()]
    measures = [R @ 1, R @ 5, R @ 10, P @ 1, RR, nDCG @ 10, AP]
    ref = ir_measures.calc_aggregate(
        measures, qrels[qrels["query_id"].isin(answerable)], run[run["query_id"].isin(answerable)]
    )
    table = assess(scored.subset(np.arange(20, 40)), scored.subset(np.arange(20)), **FAST).ranking
    ours = per_query(scored)
    names = {"R@1": R @ 1, "R@5": R @ 5, "R@10": R @ 10, "P@1": P @ 1, "MRR": RR, "nDCG@10": nDCG @ 10, "MAP": AP}
    for name, measure in names.items():
        assert np.nanmean(ours[name]) == pytest.approx(ref[measure], abs=1e-12), name
    # per query too, and the table's value is the mean over the queries with a relevant document
    per_q = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    for i, q in enumerate(scored.qids):
        if q in answerable:
            assert ours["nDCG@10"][i] == pytest.approx(per_q[(q, "nDCG@10")], abs=1e-12)
            assert ours["MAP"][i] == pytest.approx(per_q[(q, "AP")], abs=1e-12)
        else:
            assert np.isnan(ours["R@1"][i])
    row = table.set_index("measure").loc["MRR"]
    assert row["queries"] + row["left out"] == 20
    assert row["value"] == pytest.approx(np.nanmean(ours["MRR"][20:]))


def test_n_relevant_below_the_relevant_candidates_is_an_error_naming_the_query(trec_pair):
    run, qrels = trec_pair
    s = run_from_frames(run, qrels)
    bad = ScoredRun(
        s.qids,
        s.docids,
        s.mask,
        s.scores,
        s.relevance,
        s.judged,
        np.zeros_like(s.n_relevant),
        s.kind,
        s.relevant_at,
        "myrun.trec",
    )
    with pytest.raises(AssessError, match=r"myrun.trec: query q1 .*n_relevant"):
        per_query(bad)


def test_a_higher_relevant_at_keeps_ndcg_within_one_and_leaves_out_queries_without_a_relevant():
    s = synthetic(100, seed=11, prefix="t")
    strict = ScoredRun(
        s.qids, s.docids, s.mask, s.scores, s.relevance, s.judged, (s.relevance >= 2).sum(axis=1), s.kind, 2, s.source
    )
    v = per_query(strict)
    assert np.nanmax(v["nDCG@10"]) <= 1.0 + 1e-12 and np.nanmax(v["nDCG@10"]) > 0.5
    assert np.isnan(v["R@1"][strict.n_relevant == 0]).all() and not np.isnan(v["R@1"][strict.n_relevant > 0]).any()


# ------------------------------------------------------------------------------ one engine
def _assert_study_numbers(a: Assessment, test: Predictions, valid: Predictions, tol: float) -> None:
    """The assessment's numbers are the study functions' numbers on the Predictions themselves."""
    cal = a.calibration.set_index("view").loc["as given"]
    assert cal["ECE"] == pytest.approx(ece(test.probs, test.labels), abs=tol)
    assert cal["Brier"] == pytest.approx(brier(test.probs, test.labels), abs=tol)
    r1 = a.ranking.set_index("measure").loc["R@1", "value"]
    assert r1 == pytest.approx(recall_at_k(test.probs, test.labels, 1).mean(), abs=1e-12)
    conf, loss = confidences(test)
    aurc = a.abstain.set_index("confidence").loc["top score", "AURC"]
    assert aurc == pytest.approx(selective_scores(conf["top prob"].to_numpy(), loss).aurc, abs=tol)
    qhat = conformal_quantile(true_scores(candidate_distribution(valid.probs), valid.labels, "LAC"), 0.1)
    sets = prediction_sets(candidate_distribution(test.probs), qhat, "LAC")
    row = a.conformal.set_index("alpha").loc[0.1]
    assert row["qhat"] == pytest.approx(qhat, abs=tol)
    assert row["coverage"] == pytest.approx(sets[test.labels.astype(bool)].mean(), abs=1e-12)
    assert row["mean set size"] == pytest.approx(sets.sum(axis=1).mean(), abs=1e-12)


def test_a_study_predictions_gets_the_study_numbers():
    test, valid = study_predictions(300, 10, 1, "t"), study_predictions(200, 10, 2, "v")
    a = assess(as_scored(test), as_scored(valid), alpha=0.1, map="identity", score="probability", **FAST)
    _assert_study_numbers(a, test, valid, tol=1e-12)


def test_study_predictions_exported_as_trec_runs_get_the_study_numbers(tmp_path):
    """Predictions written as a TREC run and qrels (as notebook 04 exports them), read back as any
    user's run, give the numbers the study's functions give on the Predictions themselves."""
    exports = pytest.importorskip("calibrank.study.analysis.exports", reason="the study is not installed")
    preds, scored = {}, {}
    for role, pred in (("test", study_predictions(300, 10, 1, "t")), ("valid", study_predictions(200, 10, 2, "v"))):
        run_lines, qrel_lines = exports._trec_lines(pred, "bert")
        (tmp_path / f"{role}.run").write_text("\n".join(run_lines) + "\n")
        (tmp_path / f"{role}.qrels").write_text("\n".join(qrel_lines) + "\n")
        preds[role] = pred
        scored[role] = read_runs(tmp_path / f"{role}.run", tmp_path / f"{role}.qrels", kind="probability")
    a = assess(scored["test"], scored["valid"], alpha=0.1, map="identity", score="probability", **FAST)
    _assert_study_numbers(a, preds["test"], preds["valid"], tol=1e-6)  # the run holds 8 decimals


# ------------------------------------------------------------------------------ padding never counts
@pytest.mark.parametrize("kind,s", [("probability", 1), ("score", 3)])
def test_padded_slots_change_no_number(kind, s):
    test = synthetic(150, seed=3, prefix="t", kind=kind, s=s)
    valid = synthetic(120, seed=4, prefix="v", kind=kind, s=s)
    a = assess(test, valid, **FAST)
    b = assess(padded(test, 7), padded(valid, 4), **FAST)
    for name, df in a.tables().items():
        pd.testing.assert_frame_equal(df, b.tables()[name], check_exact=False, rtol=1e-9, atol=1e-12, obj=name)


def test_same_seed_same_numbers_and_the_seed_moves_the_intervals():
    test, valid = synthetic(120, seed=5, prefix="t"), synthetic(100, seed=6, prefix="v")
    a, b = assess(test, valid, seed=3, **FAST), assess(test, valid, seed=3, **FAST)
    for name, df in a.tables().items():
        pd.testing.assert_frame_equal(df, b.tables()[name], obj=name)
    c = assess(test, valid, seed=4, **FAST)
    assert c.ranking["value"].equals(a.ranking["value"])
    assert not c.ranking["value lo"].equals(a.ranking["value lo"])


def test_valid_queries_that_are_test_queries_are_refused():
    test = synthetic(50, seed=5, prefix="q")
    with pytest.raises(AssessError, match="also test queries"):
        assess(test, synthetic(50, seed=6, prefix="q"), **FAST)


# ------------------------------------------------------------------------------ what the tables say
def test_a_score_has_no_calibration_as_given_and_the_table_says_why():
    a = assess(
        synthetic(120, seed=5, prefix="t", kind="score"), synthetic(100, seed=6, prefix="v", kind="score"), **FAST
    )
    given = a.calibration.set_index("view").loc["as given"]
    assert np.isnan(given["ECE"]) and given["note"] == NO_SCALE
    assert set(a.calibration["view"]) == {"as given", "platt", "isotonic", "beta", "base rate"}
    assert (a.calibration["view"] != "as given").sum() == 4
    assert a.threshold["map"].iloc[0] == a.calibration.loc[a.calibration["deployed"], "view"].iloc[0]
    assert a.threshold["map"].iloc[0] in {"platt", "isotonic", "beta"}
    assert "no probability scale" in a.finding("calibration")


def test_the_base_rate_constant_stands_beside_every_map():
    test, valid = synthetic(120, seed=5, prefix="t"), synthetic(100, seed=6, prefix="v")
    a = assess(test, valid, **FAST)
    base = a.calibration.set_index("view").loc["base rate"]
    rate = valid.labels[valid.mask].mean()
    assert base["params"] == f"p={rate:.4g}"
    y = test.labels[test.mask]
    assert base["Brier"] == pytest.approx(np.mean((rate - y) ** 2))  # a constant: Brier in closed form
    assert base["ECE"] == pytest.approx(abs(rate - y.mean()))  # one bucket
    assert "validation base rate" in a.finding("calibration")
    assert not a.calibration.set_index("view").loc["base rate", "deployed"]


def test_a_small_validation_set_says_the_guarantee_cannot_hold():
    a = assess(synthetic(200, seed=5, prefix="t"), synthetic(6, seed=6, prefix="v", kmax=4, nota=0.0), **FAST)
    row = a.threshold.iloc[0]
    assert not row["certified"] and "too small" in row["note"] and "6 validation queries" in row["note"]
    assert "No cutoff is certified" in a.finding("thresholds")
    conf = a.conformal.set_index("alpha")
    assert "cannot hold" in conf.loc[0.1, "note"] and np.isnan(conf.loc[0.1, "qhat"])
    assert np.isfinite(conf.loc[0.2, "qhat"])  # 5 answerable queries suffice for alpha = 0.2


def test_a_certified_threshold_holds_its_precision_on_exchangeable_test_queries():
    a = assess(synthetic(600, seed=8, prefix="t"), synthetic(600, seed=9, prefix="v"), precision=0.8, **FAST)
    row = a.threshold.iloc[0]
    assert row["certified"] and row["valid value"] >= 0.8 and row["target"] == 0.8
    assert row["precision hi"] >= 0.8
    assert f"{row['cutoff']:.6g}" in a.finding("thresholds")


def test_samples_give_a_variance_confidence_and_risk_aware_ranking():
    a = assess(synthetic(150, seed=5, prefix="t", s=4), synthetic(150, seed=6, prefix="v", s=4), **FAST)
    assert "-top var" in set(a.abstain["confidence"])
    assert len(a.risk_aware) == 1 and a.risk_aware["S_test"].iloc[0] == 4
    one = assess(synthetic(150, seed=5, prefix="t"), synthetic(150, seed=6, prefix="v"), **FAST)
    assert one.risk_aware.empty and "-top var" not in set(one.abstain["confidence"])


def test_a_table_with_an_impossible_value_names_the_table_and_row():
    df = pd.DataFrame({"measure": ["R@1", "MRR"], "value": [0.5, 0.9], "value lo": [0.4, 0.5], "value hi": [0.6, 0.8]})
    with pytest.raises(AssessError, match=r"ranking table, row 1 \(measure=MRR\): value = 0.9 lies outside"):
        checked("ranking", df, keys=("measure",), inside=("value",))
    with pytest.raises(AssessError, match=r"precision = 1.2 is a proportion"):
        checked("thresholds", pd.DataFrame({"precision": [1.2]}), unit=("precision",))


def test_save_writes_every_table_as_csv(tmp_path):
    a = assess(synthetic(80, seed=5, prefix="t"), synthetic(80, seed=6, prefix="v"), **FAST)
    paths = a.save(tmp_path / "tables")
    assert {p.stem for p in paths} == set(a.tables())
    back = pd.read_csv(tmp_path / "tables" / "ranking.csv")
    assert np.allclose(back["value"], a.ranking["value"])
    assert not list((tmp_path / "tables").glob(".tmp-*"))
    with pytest.raises(TypeError, match="Assessment.ranking must be a DataFrame"):
        Assessment(**{**a.tables(), "ranking": None, "calibrator": a.calibrator})


# ------------------------------------------------------------------------------ figures
def test_the_figures_draw_with_labelled_axes():
    for kind in ("probability", "score"):
        a = assess(synthetic(120, seed=5, prefix="t", kind=kind), synthetic(100, seed=6, prefix="v", kind=kind), **FAST)
        for fig in (
            figures.plot_reliability(a.reliability, a.calibration),
            figures.plot_thresholds(a.thresholds, a.threshold),
            figures.plot_risk_coverage(a.risk_coverage, a.abstain, a.abstain_rule),
        ):
            ax = fig.axes[0]
            assert fig.axes[-1].get_xlabel() and ax.get_ylabel() and ax.get_title()
            assert ax.get_legend() is not None and ax.get_legend().get_texts()
            assert ax.lines


# ------------------------------------------------------------------------------ the bench entry
def test_the_bench_entry_measures_a_full_assessment_in_a_subprocess():
    bench = pytest.importorskip("benchmarks.assess_engine", reason="the benchmarks need the study's stack")
    bench_assess = bench.bench_assess

    res = bench_assess(60, 30, n_resamples=20)
    assert res["pairs"] <= 60 * 30 and res["pairs"] > 60 * 15
    assert res["seconds"] > 0 and res["cpu_seconds"] > 0 and res["peak_gb"] >= res["baseline_gb"] > 0
    assert set(res["tables"]) == set(Assessment.__dataclass_fields__) - {"calibrator"}
    assert [t["met"] for t in res["targets"]] == [True, True]


# ------------------------------------------------------------------------------ the library's helpers keep the padding
def _ragged_predictions() -> Predictions:
    rng = np.random.default_rng(3)
    q, k = 12, 6
    mask = np.arange(k)[None] < rng.integers(2, k + 1, q)[:, None]
    labels = np.zeros((q, k), int)
    labels[np.arange(q), 0] = 1
    probs = np.where(mask, rng.uniform(0.05, 0.95, (q, k)), 0.0)
    docids = np.where(mask, np.char.add("d", np.arange(q * k).reshape(q, k).astype(str)), "")
    return Predictions(np.array([f"q{i}" for i in range(q)]), labels, probs, probs[None], mask=mask, docids=docids)


def test_the_helpers_that_build_predictions_carry_mask_and_docids():
    pytest.importorskip("calibrank.study.analysis.subsets", reason="the study is not installed")
    from calibrank.methods.prior import correct_predictions
    from calibrank.methods.recalibrate import fit_recalibrator, recalibrate
    from calibrank.study.analysis.practice.fitdata import drop_queries
    from calibrank.study.analysis.subsets import keep_candidates

    pred = _ragged_predictions()
    dropped = drop_queries(pred, {"q0", "q5"})
    assert np.array_equal(dropped.mask, np.delete(pred.mask, [0, 5], axis=0))
    assert np.array_equal(dropped.docids, np.delete(pred.docids, [0, 5], axis=0))
    recal = recalibrate(pred, fit_recalibrator("platt", pred.probs[pred.mask], pred.labels[pred.mask]))
    assert np.array_equal(recal.mask, pred.mask) and np.array_equal(recal.docids, pred.docids)
    assert (recal.probs[~pred.mask] == 0).all() and (recal.probs[pred.mask] != pred.probs[pred.mask]).any()
    prior = correct_predictions(pred, 0.5, 0.2)
    assert np.array_equal(prior.mask, pred.mask) and np.array_equal(prior.docids, pred.docids)
    first_two = np.zeros_like(pred.mask)
    first_two[:, :2] = True
    kept = keep_candidates(pred, first_two)
    assert np.array_equal(kept.docids, pred.docids[:, :2]) and kept.mask.all()


def test_a_padded_slot_is_never_ranked_in_a_set_or_on_top():
    from calibrank.study.analysis.practice.nota_sets import top_answer

    pred = _ragged_predictions()
    pi = candidate_distribution(pred.probs, pred.mask)
    assert (pi[~pred.mask] == 0).all() and np.allclose(pi.sum(axis=1), 1.0)
    assert not prediction_sets(pi, 1.0, "LAC", pred.mask)[~pred.mask].any()
    zero = Predictions(
        pred.qids, pred.labels, np.where(pred.mask, 0.0, 0.0), np.zeros((1,) + pred.labels.shape), mask=pred.mask
    )  # every candidate tied at 0 with its padding
    # a tie puts the relevant candidate last among the real candidates, never below the padding
    assert np.array_equal(rank_of_relevant(zero.probs, zero.labels, mask=zero.mask), zero.lengths)
    _, wrong = top_answer(zero.probs, zero.labels, zero.mask)
    assert np.array_equal(wrong, zero.lengths > 1)


def test_the_seeded_split_is_reproducible_and_assessed_the_same(tmp_path, trec_pair):

    run, qrels = trec_pair
    run_path, qrels_path = tmp_path / "r.trec", tmp_path / "q.txt"
    run_path.write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score:.9f} x\n" for r in run.itertuples()))
    qrels_path.write_text("".join(f"{r.query_id} 0 {r.doc_id} {r.relevance}\n" for r in qrels.itertuples()))
    a, b = (load(run=str(run_path), qrels=str(qrels_path), seed=5) for _ in range(2))
    other = load(run=str(run_path), qrels=str(qrels_path), seed=6)
    assert np.array_equal(a.test.qids, b.test.qids) and not np.array_equal(a.test.qids, other.test.qids)
    assert not set(a.test.qids) & set(a.valid.qids) and any("seed" in n for n in a.notes)
    x, y = (assess(i.test, i.valid, notes=i.notes, seed=5, **FAST) for i in (a, b))
    for name, df in x.tables().items():
        pd.testing.assert_frame_equal(df, y.tables()[name], obj=name)
