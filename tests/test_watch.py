"""``calibrank watch`` and ``Calibrator.watch``: new, unjudged queries compared with the validation ones, and the
certified cutoff's precision estimated from the calibrated probabilities.

What is checked: the stored quantiles bound the validation CDF as claimed; a calibrator fitted on one ranker flags
another ranker's run; fresh splits of one ranker's own queries are flagged at no more than the stated rate; judged
held-out queries fall in the estimate's interval at about its level; and the command's exit status and one-line
errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from calibrank import Calibrator, cli
from calibrank.assess.deploy.calibrator import CalibratorError
from calibrank.assess.deploy.fit import fit_calibrator
from calibrank.assess.deploy.watch import (
    LEVELS,
    Distribution,
    Fingerprint,
    _ks_lower,
    estimate,
    query_summaries,
    shift_test,
)
from calibrank.assess.errors import OptionError
from calibrank.assess.read.scored import ScoredRun
from calibrank.assess.read.trec import read_runs, read_unjudged_runs


def _scored(s: np.ndarray, m: np.ndarray, y: np.ndarray) -> ScoredRun:
    q, k = s.shape
    return ScoredRun(
        np.array([f"q{i}" for i in range(q)]),
        np.tile(np.array([f"d{j}" for j in range(k)]), (q, 1)),
        m,
        np.where(m, s, 0.0)[None],
        y * m,
        m,
        (y * m).sum(axis=1),
    )


def bm25_like(q: int, rng: np.random.Generator, k: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positive, right-skewed scores (a term-matching ranker): a query's scale times a gamma draw, more for the
    relevant candidates."""
    n = rng.integers(3, k + 1, q)
    m = np.arange(k)[None] < n[:, None]
    y = ((rng.random((q, k)) < 0.25) & m).astype(int)
    s = rng.gamma(8.0, 1 / 8, (q, 1)) * (3.0 + rng.gamma(2.0, 1.5, (q, k)) + 8.0 * y)
    return np.where(m, s, 0.0), m, y


def cross_encoder_like(q: int, rng: np.random.Generator, k: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits around 0 (a cross-encoder), symmetric, the relevant ones higher."""
    n = rng.integers(3, k + 1, q)
    m = np.arange(k)[None] < n[:, None]
    y = ((rng.random((q, k)) < 0.25) & m).astype(int)
    s = rng.normal(-2.0, 2.5, (q, k)) + 5.0 * y
    return np.where(m, s, 0.0), m, y


def calibrated_world(q: int, rng: np.random.Generator, k: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores whose probability of relevance is exactly a logistic of the score, which Platt's map fits."""
    n = rng.integers(3, k + 1, q)
    m = np.arange(k)[None] < n[:, None]
    s = rng.normal(0, 0.5, (q, 1)) + rng.normal(0, 1.5, (q, k))
    y = ((rng.random((q, k)) < expit(1.5 * s - 2.0)) & m).astype(int)
    return np.where(m, s, 0.0), m, y


@pytest.fixture(scope="module")
def bm25_cal():
    s, m, y = bm25_like(400, np.random.default_rng(0))
    cal = fit_calibrator(_scored(s, m, y), precision=0.7)
    assert cal.cutoff.certified and cal.fingerprint is not None
    return cal


# --------------------------------------------------------------------------- the fingerprint


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(1).normal(size=537),
        np.random.default_rng(2).integers(1, 9, 300).astype(float),  # many ties
        np.random.default_rng(3).normal(size=17),
    ],
)  # fewer than LEVELS
def test_the_stored_quantiles_bound_the_validation_cdf(values):
    d = Distribution.of(values)
    assert d.n == values.size and len(d.quantiles) == LEVELS + 1
    x = np.concatenate([values, np.linspace(values.min() - 1, values.max() + 1, 301)])
    for left in (False, True):
        lo, hi = d.cdf_bounds(x, left=left)
        f = (values[None] < x[:, None]).mean(axis=1) if left else (values[None] <= x[:, None]).mean(axis=1)
        assert (lo <= f + 1e-12).all() and (f <= hi + 1e-12).all()
        assert (hi - lo <= 1 / LEVELS + 1e-12).all()


def test_the_shift_statistic_is_a_lower_bound_of_the_two_sample_ks_within_the_quantiles_resolution():
    rng = np.random.default_rng(4)
    for shift in (0.0, 0.2, 1.0):
        a, b = rng.normal(size=800), rng.normal(shift, 1, 300)
        exact = stats.ks_2samp(a, b).statistic
        bound = _ks_lower(Distribution.of(a), b)
        assert exact - 1 / LEVELS - 1e-12 <= bound <= exact + 1e-12


def test_query_summaries_and_the_fingerprint_of_ragged_lists():
    s = np.array([[5.0, 3.0, 1.0], [2.0, 0.0, 0.0], [4.0, 4.0, 0.0]])
    m = np.array([[True, True, True], [True, False, False], [True, True, False]])
    got = query_summaries(s, m)
    assert got["top"].tolist() == [5.0, 2.0, 4.0]
    assert got["margin"].tolist() == [2.0, 0.0]  # the one-candidate list has none
    assert got["mean"].tolist() == [3.0, 2.0, 4.0]
    assert got["length"].tolist() == [3.0, 1.0, 2.0]
    fp = Fingerprint.of(s, m)
    assert (fp.queries, fp.candidates, fp.margin.n) == (3, 6, 2)
    assert Fingerprint.from_dict(json.loads(json.dumps(fp.to_dict()))) == fp


# --------------------------------------------------------------------------- the shift test


def test_a_calibrator_fitted_on_one_ranker_flags_another_rankers_run(bm25_cal):
    rng = np.random.default_rng(5)
    s, m, _ = cross_encoder_like(150, rng)
    w = bm25_cal.watch(s, m, n_resamples=200)
    assert w.flagged
    assert {t.summary for t in w.shift.tests if t.flagged} >= {"top", "mean"}
    assert "the certified guarantee does not apply to them" in w.lines()[0]
    assert w.estimate is not None and w.estimate.kept_share[0] < 0.5  # most logits lie below a BM25 cutoff
    # the same ranker on new queries is not
    s, m, _ = bm25_like(150, rng)
    assert not bm25_cal.watch(s, m, n_resamples=200).flagged


def test_a_rescaled_ranker_is_flagged_even_with_its_order_unchanged(bm25_cal):
    """A ranker whose scores were multiplied by 1.5 (a new model version on another scale) ranks as before, but
    the raw cutoff no longer means what was certified."""
    s, m, _ = bm25_like(200, np.random.default_rng(6))
    assert bm25_cal.watch(1.5 * s, m, n_resamples=200).flagged


def test_on_real_dialogues_okapi_bm25s_calibrator_flags_bm25plus_and_bm25l_runs():
    """chatterbot's English dialogues: each line's next line among 29 random lines, ranked by rank_bm25 (a library
    this project does not own). A calibrator fitted on Okapi BM25's scores of 250 queries passes Okapi on 300 other
    queries and flags BM25+ and BM25L on them (the same order of magnitude, other shapes)."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    corpus = pytest.importorskip("chatterbot_corpus")
    import glob
    import os
    import random

    import yaml

    pairs = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(corpus.__file__), "data", "english", "*.yml"))):
        for conv in yaml.safe_load(open(path, encoding="utf-8")).get("conversations", []):
            lines = [str(x) for x in conv]
            pairs += list(zip(lines, lines[1:]))
    pool = [b for _, b in pairs]
    rng = random.Random(0)
    rng.shuffle(pairs)
    lists = [(context, [true] + rng.sample(pool, 29)) for context, true in pairs[:550]]

    def scores(chosen, ranker: str) -> np.ndarray:
        return np.array(
            [
                getattr(rank_bm25, ranker)([c.lower().split() or ["_"] for c in cands]).get_scores(
                    context.lower().split()
                )
                for context, cands in chosen
            ]
        )

    valid = scores(lists[:250], "BM25Okapi")
    y = np.zeros(valid.shape, int)
    y[:, 0] = 1
    cal = fit_calibrator(_scored(valid, np.ones(valid.shape, bool), y), precision=0.5)
    watched = {r: cal.watch(scores(lists[250:], r), n_resamples=50) for r in ("BM25Okapi", "BM25Plus", "BM25L")}
    assert {r: w.flagged for r, w in watched.items()} == {"BM25Okapi": False, "BM25Plus": True, "BM25L": True}


@pytest.mark.parametrize("n_valid,n_new", [(300, 300), (600, 80)])
def test_fresh_splits_of_one_rankers_queries_are_flagged_at_no_more_than_the_stated_rate(n_valid, n_new):
    """400 random splits of 4,000 queries of one ranker: the fingerprint of one part, the test of another. Flagged
    at most at the false-alarm rate (up to two standard errors of 400 splits)."""
    rng = np.random.default_rng(7)
    s, m, _ = bm25_like(4000, rng)
    alpha, splits = 0.05, 400
    flagged = 0
    for _ in range(splits):
        idx = rng.permutation(len(s))
        v, w = idx[:n_valid], idx[n_valid : n_valid + n_new]
        flagged += shift_test(Fingerprint.of(s[v], m[v]), s[w], m[w], false_alarm=alpha).flagged
    assert flagged / splits <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / splits)


# --------------------------------------------------------------------------- the label-free estimate


def test_judged_held_out_queries_fall_in_the_estimates_interval_at_about_its_level():
    """Where the map is well calibrated (relevance a logistic of the score, Platt's map), the precision that judging
    200 held-out queries measures falls in the 90% interval about 90% of the time."""
    rng = np.random.default_rng(8)
    s, m, y = calibrated_world(2000, rng)
    cal = fit_calibrator(_scored(s, m, y), precision=0.8, map="platt")
    assert cal.cutoff.certified
    level, sets, inside = 0.9, 200, 0
    for r in range(sets):
        s2, m2, y2 = calibrated_world(200, rng)
        w = cal.watch(s2, m2, level=level, n_resamples=400, seed=r)
        keep = m2 & (s2 >= cal.cutoff.raw)
        judged = (y2 * keep).sum() / keep.sum()
        _, lo, hi = w.estimate.precision
        inside += lo <= judged <= hi
    assert abs(inside / sets - level) <= 3 * np.sqrt(level * (1 - level) / sets)  # 0.836 .. 0.964


def test_the_estimate_reads_the_kept_candidates_probabilities():
    p = np.array([[0.9, 0.7, 0.2, 0.1], [0.6, 0.3, 0.1, 0.0]])
    s = np.log(np.clip(p, 1e-9, 1) / np.clip(1 - p, 1e-9, 1))
    m = np.array([[True] * 4, [True, True, True, False]])
    e = estimate(p, s, m, raw=0.0, recall=True, n_resamples=300)
    assert e.kept == 3
    assert e.precision[0] == pytest.approx((0.9 + 0.7 + 0.6) / 3)
    assert e.kept_share[0] == pytest.approx(3 / 7)
    assert e.recall[0] == pytest.approx((0.9 + 0.7 + 0.6) / (0.9 + 0.7 + 0.2 + 0.1 + 0.6 + 0.3 + 0.1))
    for v, lo, hi in (e.precision, e.kept_share, e.recall):
        assert lo <= v <= hi or np.isclose(lo, v) or np.isclose(hi, v)


def test_same_seed_same_numbers(bm25_cal):
    s, m, _ = bm25_like(120, np.random.default_rng(9))
    a, b = bm25_cal.watch(s, m, seed=3, n_resamples=300), bm25_cal.watch(s, m, seed=3, n_resamples=300)
    assert a.to_dict() == b.to_dict()
    assert bm25_cal.watch(s, m, seed=4, n_resamples=300).estimate.precision != a.estimate.precision


def test_watch_settings_are_checked_and_named_as_python_spells_them(bm25_cal):
    s, m, _ = bm25_like(20, np.random.default_rng(10))
    with pytest.raises(OptionError, match=r"flase_alarm: not an option of Calibrator.watch \(did you mean false_alarm"):
        bm25_cal.watch(s, m, flase_alarm=0.1)
    with pytest.raises(OptionError, match=r"false_alarm: expected a number in \(0, 1\), got 1.5"):
        bm25_cal.watch(s, m, false_alarm=1.5)
    with pytest.raises(CalibratorError, match="every list needs at least one candidate"):
        bm25_cal.watch(s, np.zeros(s.shape, bool))


def test_a_calibrator_without_a_fingerprint_says_watching_needs_a_refit(bm25_cal, tmp_path):
    bare = Calibrator(bm25_cal.map, bm25_cal.cutoff, bm25_cal.abstain_rule, bm25_cal.shortlist_rule, bm25_cal.fitted_on)
    back = Calibrator.load(bare.save(tmp_path / "calibrator.json"))  # still loads
    assert back.fingerprint is None and back == bare
    with pytest.raises(CalibratorError, match="watching needs a refit"):
        back.watch(np.ones((2, 3)))


def test_watching_loads_no_fitting_or_plotting_stack(bm25_cal, tmp_path):
    path = bm25_cal.save(tmp_path / "calibrator.json")
    code = (
        f"import sys, numpy as np; from calibrank import Calibrator; c = Calibrator.load({str(path)!r}); "
        "w = c.watch(np.random.default_rng(0).gamma(2, 5, (30, 8)), n_resamples=50); w.lines(); "
        "print(sorted(m for m in ('sklearn', 'pandas', 'torch', 'matplotlib', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- the command


def _write_run(
    path: Path, s: np.ndarray, m: np.ndarray, prefix: str, qrels: Path | None = None, y: np.ndarray | None = None
) -> Path:
    lines, judged = [], []
    for i in range(s.shape[0]):
        for j in np.flatnonzero(m[i]):
            lines.append(f"{prefix}{i} Q0 {prefix}{i}d{j} 0 {s[i, j]:.6f} tag")
            if y is not None:
                judged.append(f"{prefix}{i} 0 {prefix}{i}d{j} {int(y[i, j])}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if qrels is not None:
        qrels.write_text("\n".join(judged) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, bm25_cal):
    d = tmp_path_factory.mktemp("watch")
    rng = np.random.default_rng(11)
    s, m, y = bm25_like(120, rng)
    same = _write_run(d / "same.trec", s, m, "n", d / "same.qrels", y)
    s, m, _ = cross_encoder_like(120, rng)
    other = _write_run(d / "other.trec", s, m, "o")
    return {
        "calibrator": bm25_cal.save(d / "calibrator.json"),
        "same": same,
        "same_qrels": d / "same.qrels",
        "other": other,
        "dir": d,
    }


def _fails(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_the_command_exits_0_on_alike_queries_and_1_on_another_rankers(deployed, capsys, tmp_path):
    out = tmp_path / "found.json"
    code = cli.main(
        [
            "watch",
            str(deployed["same"]),
            "--calibrator",
            str(deployed["calibrator"]),
            "--n-resamples",
            "200",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert "no shift found" in text and "expected precision" in text
    found = json.loads(out.read_text())
    assert found["flagged"] is False and found["queries"] == 120 and found["run"] == [str(deployed["same"])]
    code = cli.main(
        ["watch", str(deployed["other"]), "--calibrator", str(deployed["calibrator"]), "--n-resamples", "200"]
    )
    text = capsys.readouterr().out
    assert code == 1
    assert "SHIFT" in text and "the certified guarantee does not apply to them" in text


def test_the_unjudged_reading_is_the_judged_one_less_its_judgments(deployed):
    judged = read_runs(deployed["same"], deployed["same_qrels"])
    new = read_unjudged_runs(deployed["same"])
    assert new.qids.tolist() == judged.qids.tolist()
    assert np.array_equal(new.scores, judged.scores) and np.array_equal(new.mask, judged.mask)
    assert not new.judged.any() and not new.labels.any()


@pytest.mark.parametrize(
    "extra,expected",
    [
        (["--false-alarm", "0"], "--false-alarm: expected a number in (0, 1), got 0.0"),
        (["--false-alarm", "often"], "--false-alarm: expected a number in (0, 1), got 'often'"),
        (["--level", "2"], "--level: expected a number in (0, 1), got 2.0"),
        (["--n-resamples", "1"], "--n-resamples: expected a whole number >= 2, got 1"),
        (["--calibrator", "missing.json"], "--calibrator: missing.json: no such file"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(deployed, capsys, extra, expected):
    argv = ["watch", str(deployed["same"]), "--calibrator", str(deployed["calibrator"]), *extra]
    assert expected in _fails(capsys, argv)


def test_missing_inputs_and_bad_files_are_one_line(deployed, capsys, tmp_path):
    assert "--calibrator: required" in _fails(capsys, ["watch", str(deployed["same"])])
    assert "RUN: expected one or more TREC run files" in _fails(
        capsys, ["watch", "--calibrator", str(deployed["calibrator"])]
    )
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 high tag\n", encoding="utf-8")
    err = _fails(capsys, ["watch", str(bad), "--calibrator", str(deployed["calibrator"])])
    assert f"{bad}, line 1: score 'high' is not a number" in err
    (tmp_path / "afile").write_text("x")
    err = _fails(
        capsys,
        [
            "watch",
            str(deployed["same"]),
            "--calibrator",
            str(deployed["calibrator"]),
            "--out",
            str(tmp_path / "afile" / "found.json"),
        ],
    )
    assert "--out:" in err and "is a file" in err
    assert not (tmp_path / "afile").is_dir()


def test_the_command_says_in_one_line_that_a_calibrator_without_fingerprint_needs_a_refit(deployed, capsys, tmp_path):
    cal = Calibrator.load(deployed["calibrator"])
    bare = Calibrator(cal.map, cal.cutoff, cal.abstain_rule, cal.shortlist_rule, cal.fitted_on).save(
        tmp_path / "old.json"
    )
    out = tmp_path / "found.json"
    err = _fails(capsys, ["watch", str(deployed["same"]), "--calibrator", str(bare), "--out", str(out)])
    assert f"{bare}: no fingerprint of the validation scores" in err and "watching needs a refit" in err
    assert not out.exists()


def test_the_command_refuses_an_edited_calibrator(deployed, capsys, tmp_path):
    d = json.loads(Path(deployed["calibrator"]).read_text())
    d["abstain"]["cut"] += 1.0
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(d), encoding="utf-8")
    err = _fails(capsys, ["watch", str(deployed["same"]), "--calibrator", str(edited)])
    assert f"{edited}: sha256: the content was edited after calibrank wrote it" in err


def test_watch_help_loads_nothing_heavy():
    code = (
        "import sys, calibrank.cli\ntry:\n    calibrank.cli.main(['watch', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]") and "--false-alarm" in out
