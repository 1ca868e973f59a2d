"""``calibrator.json`` says when it was edited: a content digest checked on loading, no key given twice, no key
unknown at any depth, every number in its range. Each probe below loaded silently before the digest and the checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from calibrank import Calibrator
from calibrank.assess.deploy.calibrator import CalibratorError, content_digest
from calibrank.assess.deploy.fit import fit_calibrator
from calibrank.assess.read.scored import ScoredRun


def _run(q: int = 200, seed: int = 0) -> ScoredRun:
    rng = np.random.default_rng(seed)
    k = 12
    y = (rng.random((q, k)) < 0.2).astype(int)
    s = 2.0 * y + rng.normal(0, 1, (q, k)) + 10.0
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
        source="valid.trec",
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cal")
    valid = d / "valid.trec"
    valid.write_text("stands in for the validation run\n", encoding="utf-8")
    certified = fit_calibrator(_run(), precision=0.7, map="platt", inputs=[valid])
    uncertified = fit_calibrator(_run(q=40), precision=0.995, map="platt")
    assert certified.cutoff.certified and not uncertified.cutoff.certified
    return {"certified": certified.save(d / "certified.json"), "uncertified": uncertified.save(d / "uncertified.json")}


def _edited(path: Path, edit: Callable[[dict], None], tmp_path: Path) -> Path:
    d = json.loads(path.read_text(encoding="utf-8"))
    edit(d)
    out = tmp_path / "calibrator.json"
    out.write_text(json.dumps(d, indent=2), encoding="utf-8")
    return out


def _refused(path: Path, *expected: str) -> str:
    with pytest.raises(CalibratorError) as exc:
        Calibrator.load(path)
    text = str(exc.value)
    assert "\n" not in text and text.startswith(str(path)), text
    for e in expected:
        assert e in text, text
    return text


EDITED = "sha256: the content was edited after calibrank wrote it"


def _flip_a(d: dict) -> None:
    d["map"]["params"]["A"] = -d["map"]["params"]["A"]


def _shift_cutoff(d: dict) -> None:
    """The raw cutoff moved, and its probability made to agree with the map, as a careful hand would."""
    import math

    raw = d["cutoff"]["raw"] - 0.5
    m = d["map"]
    q = 1 / (1 + math.exp(-(raw - m["center"]) / m["scale"]))
    a, b = m["params"]["A"], m["params"]["B"]
    d["cutoff"]["raw"] = raw
    d["cutoff"]["probability"] = 1 / (1 + math.exp(-(a * math.log(q / (1 - q)) + b)))


@pytest.mark.parametrize(
    "which,edit,expected",
    [
        ("certified", lambda d: d["cutoff"].update(raw=d["cutoff"]["raw"] - 0.5), "cutoff.probability: "),
        ("certified", _shift_cutoff, None),  # consistent with the map: only the digest tells
        ("certified", lambda d: d["abstain"].update(cut=d["abstain"]["cut"] - 0.05), EDITED),
        ("uncertified", _flip_a, EDITED),
        (
            "certified",
            lambda d: d["shortlist"].update(qhat=1.5),
            "shortlist.qhat: expected a number in [0, 1], got 1.5",
        ),
        ("certified", lambda d: d["fitted_on"]["inputs"][0].update(sha256="0" * 64), EDITED),
        ("certified", lambda d: d["fitted_on"].update(note="tuned by hand"), "fitted_on: unknown key(s) ['note']"),
    ],
)
def test_each_probe_of_an_edited_file_is_refused_in_one_line_naming_the_file(files, tmp_path, which, edit, expected):
    path = _edited(files[which], edit, tmp_path)
    _refused(path, expected or EDITED, "expected")


def test_a_key_given_twice_is_refused_naming_the_file_lines_and_key(files, tmp_path):
    text = files["certified"].read_text(encoding="utf-8")
    assert text.startswith('{\n  "format"')
    path = tmp_path / "twice.json"
    path.write_text(text.replace('{\n  "format"', '{\n  "schema": 2,\n  "format"', 1), encoding="utf-8")
    _refused(path, "lines 2 and 4", "key 'schema' is given twice in one object; expected each key once")


@pytest.mark.parametrize(
    "edit,expected",
    [
        (
            lambda d: d["fingerprint"]["top"].update(mean=1.0),
            "fingerprint: top: expected an object with keys ['n', 'quantiles']",
        ),
        (lambda d: d["fitted_on"]["inputs"][0].update(size=10), "fitted_on.inputs[0]: unknown key(s) ['size']"),
        (lambda d: d["fitted_on"]["map_brier"].update(splines=0.1), "fitted_on.map_brier: unknown key(s) ['splines']"),
        (lambda d: d["map"]["params"].update(C=1.0), "map: params: platt takes ['A', 'B']"),
        (lambda d: d["fitted_on"].update(queries=-3), "fitted_on.queries: expected a whole number >= 0, got -3"),
        (
            lambda d: d["fitted_on"].update(candidates=12.5),
            "fitted_on.candidates: expected a whole number >= 0, got 12.5",
        ),
        (lambda d: d["fitted_on"].update(samples=True), "fitted_on.samples: expected a whole number >= 1, got True"),
        (lambda d: d["fitted_on"].update(base_rate=1.5), "fitted_on.base_rate: expected a number in [0, 1], got 1.5"),
        (lambda d: d["fitted_on"].update(base_rate=0.5), "fitted_on.base_rate: 0.5 but"),
        (lambda d: d["fitted_on"]["inputs"][0].update(sha256="ABC"), "fitted_on.inputs[0].sha256: expected a SHA-256"),
        (lambda d: d.update(sha256="not a digest"), "sha256: expected a SHA-256 as 64 lowercase hex digits"),
        (lambda d: d["cutoff"].update(probability=1.2), "cutoff.probability: expected a number in [0, 1], got 1.2"),
        (
            lambda d: d["abstain"].update(confidence="margin", cut=2.0),
            "abstain.cut: a margin confidence lies in [0, 1]",
        ),
        (lambda d: d["shortlist"].update(qhat=-0.1), "shortlist.qhat: expected a number in [0, 1], got -0.1"),
        (
            lambda d: d["fingerprint"]["mean"].update(n=7),
            "fingerprint: top, mean, length: expected one value per validation query",
        ),
        (
            lambda d: d["fingerprint"]["top"]["quantiles"].reverse(),
            "fingerprint: top.quantiles: expected 201 finite non-decreasing numbers",
        ),
        (
            lambda d: d["fingerprint"].update(levels=100),
            "fingerprint: levels: this calibrank stores quantiles at j / 200",
        ),
        (
            lambda d: d["fitted_on"].update(score_kind="logit"),
            "fitted_on.score_kind: 'logit' but the map reads a score",
        ),
        (lambda d: d.pop("sha256"), "calibrator: missing key(s) ['sha256']"),
    ],
)
def test_unknown_keys_at_any_depth_and_numbers_out_of_range_are_refused(files, tmp_path, edit, expected):
    _refused(_edited(files["certified"], edit, tmp_path), expected)


def test_the_digest_covers_the_content_not_its_layout(files, tmp_path):
    d = json.loads(files["certified"].read_text(encoding="utf-8"))
    path = tmp_path / "relaid.json"
    path.write_text(json.dumps(dict(reversed(list(d.items()))), separators=(",", ":")), encoding="utf-8")
    assert Calibrator.load(path) == Calibrator.load(files["certified"])
    assert content_digest(d) == d["sha256"]


def test_an_edited_file_loads_on_request_and_its_provenance_records_it(files, tmp_path):
    path = _edited(files["certified"], lambda d: d["abstain"].update(cut=d["abstain"]["cut"] - 0.05), tmp_path)
    recorded = json.loads(files["certified"].read_text())["sha256"]
    cal = Calibrator.load(path, allow_edited=True)
    (edit,) = cal.fitted_on["edited"]
    assert edit["recorded"] == recorded and edit["content"] == content_digest(json.loads(path.read_text()))
    again = Calibrator.load(cal.save(tmp_path / "resaved.json"))  # sealed anew, the record kept
    assert again.fitted_on["edited"] == [edit]
    assert "edited" in " ".join(again.watch(np.full((3, 4), 10.0), n_resamples=20).lines())


def test_a_schema_1_file_has_no_digest_and_loads_only_on_request(files, tmp_path):
    def to_schema_1(d: dict) -> None:
        d.update(schema=1)
        del d["sha256"], d["fingerprint"]

    path = _edited(files["certified"], to_schema_1, tmp_path)
    _refused(path, "schema 1 carries no digest, so an edit cannot be told; expected schema 2")
    cal = Calibrator.load(path, allow_edited=True)
    assert cal.fingerprint is None and cal.fitted_on["edited"][0]["recorded"] is None


def test_a_file_without_fingerprint_loads(files, tmp_path):
    cal = Calibrator.load(files["certified"])
    bare = Calibrator(cal.map, cal.cutoff, cal.abstain_rule, cal.shortlist_rule, cal.fitted_on)
    path = bare.save(tmp_path / "bare.json")
    assert "fingerprint" not in json.loads(path.read_text())
    assert Calibrator.load(path) == bare


def test_the_constructor_checks_what_loading_checks(files):
    cal = Calibrator.load(files["certified"])
    with pytest.raises(CalibratorError, match=r"fitted_on: unknown key\(s\) \['note'\]"):
        Calibrator(cal.map, cal.cutoff, cal.abstain_rule, cal.shortlist_rule, {**cal.fitted_on, "note": 1})
    with pytest.raises(CalibratorError, match="fingerprint: it summarises 200 queries"):
        Calibrator(
            cal.map,
            cal.cutoff,
            cal.abstain_rule,
            cal.shortlist_rule,
            {**cal.fitted_on, "queries": 100},
            cal.fingerprint,
        )


def test_loading_a_sealed_file_needs_no_fitting_stack(files):
    code = (
        f"import sys; from calibrank import Calibrator; c = Calibrator.load({str(files['certified'])!r}); "
        "c.predict_proba([1.0, 12.0]); c.keep([12.0]); "
        "print(sorted(m for m in ('sklearn', 'pandas', 'matplotlib', 'pyarrow', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
