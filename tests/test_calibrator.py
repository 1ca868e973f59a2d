"""The Calibrator: JSON that round-trips and refuses what it does not know, maps that equal the fitting stack's,
and loading that needs numpy and scipy only."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from calibrank import Calibrator
from calibrank.assess.deploy.calibrator import CalibratorError
from calibrank.assess.deploy.fit import fit_calibrator, fit_map
from calibrank.assess.deploy.maps import MapError, ScoreMap
from calibrank.assess.read.scored import ScoredRun
from calibrank.methods.recalibrate import fit_recalibrator


def _run(q: int = 200, seed: int = 0, kind: str = "score") -> ScoredRun:
    rng = np.random.default_rng(seed)
    k = 12
    y = (rng.random((q, k)) < 0.2).astype(int)
    s = 2.0 * y + rng.normal(0, 1, (q, k)) + 10.0
    if kind == "probability":
        s = 1 / (1 + np.exp(-(s - 10.0)))
    mask = np.arange(k)[None] < rng.integers(3, k + 1, q)[:, None]
    docids = np.char.add("d", np.arange(q * k).reshape(q, k).astype(str))
    return ScoredRun(
        np.array([f"q{i}" for i in range(q)]),
        docids,
        mask,
        np.where(mask, s, 0)[None],
        y * mask,
        mask,
        (y * mask).sum(axis=1),
        kind=kind,
        source="valid.trec",
    )


@pytest.fixture(scope="module")
def cal():
    return fit_calibrator(_run(), precision=0.7)


def test_it_round_trips_through_json(cal, tmp_path):
    path = cal.save(tmp_path / "calibrator.json")
    back = Calibrator.load(path)
    assert back.to_dict() == cal.to_dict()
    s = np.linspace(7, 14, 50)
    assert np.array_equal(back.predict_proba(s), cal.predict_proba(s))
    assert np.array_equal(back.keep(s), s >= cal.cutoff.raw)
    assert not list(tmp_path.glob(".tmp-*"))


@pytest.mark.parametrize(
    "edit,expected",
    [
        (lambda d: d.update(extra=1), "unknown key(s) ['extra']"),
        (lambda d: d["cutoff"].update(targte=0.9), "cutoff: unknown key(s) ['targte']"),
        (lambda d: d["map"].update(method="splines"), "method: expected one of"),
        (
            lambda d: d["map"].update(method="platt", params={"A": float("nan"), "B": 0.0}),
            "A: expected a finite number",
        ),
        (lambda d: d.update(schema=99), "schema: this calibrank reads schema 2 (and 1, unsealed), got 99"),
        (lambda d: d["abstain"].update(confidence="gut"), "abstain.confidence: expected one of"),
        (lambda d: d["cutoff"].update(target=1.5), "cutoff.target: expected a number strictly between 0 and 1"),
    ],
)
def test_a_damaged_or_foreign_file_is_one_error_naming_the_file_and_field(cal, tmp_path, edit, expected):
    d = json.loads(json.dumps(cal.to_dict()))
    edit(d)
    path = tmp_path / "calibrator.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(CalibratorError) as exc:
        Calibrator.load(path)
    assert str(path) in str(exc.value) and expected in str(exc.value)


def test_not_json_names_the_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{\n  "format": \n', encoding="utf-8")
    with pytest.raises(CalibratorError, match=r"c.json, line 3: not JSON"):
        Calibrator.load(path)


@pytest.mark.parametrize("method", ["platt", "isotonic", "beta"])
def test_a_stored_map_equals_the_fitting_stack_on_the_same_pairs(method):
    run = _run(kind="probability")
    p, y = run.scores[0][run.mask], run.labels[run.mask]
    stored = ScoreMap.from_dict(json.loads(json.dumps(fit_map(method, p, y, "probability").to_dict())))
    grid = np.linspace(0.001, 0.999, 200)
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(p, y).predict(grid)
    else:
        ref = fit_recalibrator(method, p, y)(grid)
    assert np.allclose(stored(grid), ref, atol=1e-12)


def test_a_map_checks_itself():
    with pytest.raises(MapError, match="a bare score needs both"):
        ScoreMap("score", "platt", {"A": 1.0, "B": 0.0})
    with pytest.raises(MapError, match="non-decreasing"):
        ScoreMap("probability", "isotonic", {"x": [0.1, 0.5], "y": [0.9, 0.2]})
    assert "not positive" in ScoreMap("logit", "platt", {"A": -1.0, "B": 0.0}).degenerate()
    assert not ScoreMap("logit", "platt", {"A": -1.0, "B": 0.0}).increasing


def test_keep_without_a_certified_cutoff_says_what_can_be(tmp_path):
    cal = fit_calibrator(_run(q=40), precision=0.995)
    assert cal.cutoff.raw is None
    with pytest.raises(CalibratorError, match="highest certifiable level"):
        cal.keep([1.0])


def test_abstain_and_shortlist_take_one_list_or_many(cal):
    one = np.array([12.5, 9.0, 8.0])
    assert isinstance(cal.abstain(one), bool)
    many = np.stack([one, one - 5])
    assert cal.abstain(many).shape == (2,) and cal.abstain(many)[0] == cal.abstain(one)
    assert cal.shortlist(one).dtype == bool and cal.shortlist(one).shape == (3,)


def test_loading_and_applying_need_no_fitting_or_study_stack(cal, tmp_path):
    path = cal.save(tmp_path / "calibrator.json")
    code = (
        f"import sys; from calibrank import Calibrator; c = Calibrator.load({str(path)!r}); "
        "c.predict_proba([1.0, 12.0]); c.abstain([12.0, 9.0]); c.shortlist([12.0, 9.0]); "
        "print(sorted(m for m in ('sklearn', 'pandas', 'torch', 'matplotlib', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
