"""The page a newcomer reads: maps that do not overreach at the tails, sentences about the abstain rule that are
true under ties, every measure explained, calls that work, one rounding everywhere, CSVs without float noise."""

from __future__ import annotations

import doctest
import importlib
import json
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.isotonic import IsotonicRegression  # noqa: E402

from calibrank.assess.deploy.calibrator import Calibrator  # noqa: E402
from calibrank.assess.deploy.fit import _coverage_cut, fit_map  # noqa: E402
from calibrank.assess.deploy.maps import ScoreMap  # noqa: E402
from calibrank.assess.engine import assess  # noqa: E402
from calibrank.assess.read.scored import ScoredRun  # noqa: E402

FAST = {"n_resamples": 50}
TERMS = (
    "ECE",
    "Brier",
    "NLL",
    "AURC",
    "E-AURC",
    "AUGRC",
    "NOTA",
    "qhat",
    "list confidence",
    "R@1",
    "MRR",
    "nDCG@10",
    "MAP",
    "P@1",
)


def _run(
    q: int, seed: int, prefix: str, *, k: int = 10, gap: float = 1.2, tied: bool = False, shift: float = 0.0
) -> ScoredRun:
    """One relevant candidate per list among ``k``; raw scores that track it. ``tied``: BM25-like integer scores
    floored at 0, so that many lists' top two candidates share a score."""
    rng = np.random.default_rng(seed)
    y = np.zeros((q, k), int)
    y[np.arange(q), rng.integers(0, k, q)] = 1
    s = gap * y + rng.normal(0, 1, (q, k)) + shift
    if tied:
        s = np.maximum(np.round(s), 0.0)
    docids = np.char.add(f"{prefix}d", np.arange(q * k).reshape(q, k).astype(str))
    return ScoredRun(
        np.array([f"{prefix}{i}" for i in range(q)]),
        docids,
        np.ones((q, k), bool),
        s[None],
        y,
        np.ones((q, k), bool),
        y.sum(axis=1),
        kind="score",
        source=prefix,
    )


def _blocks(m: ScoreMap) -> list[tuple[float, float, float]]:
    """``(first x, last x, value)`` of each flat piece of an isotonic map."""
    x, y = np.asarray(m.params["x"]), np.asarray(m.params["y"])
    starts = np.flatnonzero(np.r_[True, np.diff(y) != 0])
    ends = np.r_[starts[1:], y.size] - 1
    return [(x[a], x[b], y[a]) for a, b in zip(starts, ends)]


# ------------------------------------------------------------------------------ tails
def _lonely_top(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities whose five highest validation candidates are relevant, far above a crowd at rate <= 0.6."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.0, 0.8, 2000)
    y = (rng.random(2000) < 0.75 * p).astype(int)
    return np.r_[p, [0.95, 0.96, 0.97, 0.98, 0.99]], np.r_[y, [1, 1, 1, 1, 1]]


def test_the_isotonic_map_pools_its_end_blocks_until_each_holds_enough_candidates():
    p, y = _lonely_top()
    raw = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(p, y)
    assert raw.predict([0.99])[0] == 1.0  # five candidates make a 1.0 without pooling
    m = fit_map("isotonic", p, y, "probability")
    assert float(m(0.99)) < 0.9 and np.all(np.diff(m.params["y"]) >= 0)
    from calibrank.assess.deploy.fit import TAIL

    blocks = _blocks(m)
    held = [int(((p >= a) & (p <= b)).sum()) for a, b, _ in blocks]
    assert held[0] >= TAIL and held[-1] >= TAIL
    top = blocks[-1]
    behind = (p >= top[0]) & (p <= top[1])
    assert top[2] == pytest.approx(y[behind].mean(), abs=1e-12)  # the end value is the share among its candidates
    # with no pooling asked for, the map is scikit-learn's
    grid = np.linspace(0, 1, 501)
    assert np.allclose(fit_map("isotonic", p, y, "probability", tail=1)(grid), raw.predict(grid), atol=1e-12)


def test_a_pooled_map_round_trips_through_calibrator_json(tmp_path):
    cal = assess(_run(200, 1, "t"), _run(200, 2, "v"), map="isotonic", **FAST).calibrator
    back = Calibrator.load(cal.save(tmp_path / "calibrator.json"))
    grid = np.linspace(-4, 6, 301)
    assert back.map == cal.map and np.array_equal(back.predict_proba(grid), cal.predict_proba(grid))
    assert json.loads((tmp_path / "calibrator.json").read_text())["map"]["params"].keys() == {"x", "y"}


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_the_page_counts_the_test_candidates_beyond_what_the_map_rests_on(method):
    from calibrank.assess.deploy.fit import TAIL, raw_scores

    valid, test = _run(150, 2, "v"), _run(150, 1, "t", shift=0.6)  # test scores reach past the validation ones
    a = assess(test, valid, map=method, **FAST)
    row = a.calibration.set_index("view").loc[method]
    m = a.calibrator.map
    qv = np.sort(m.base(raw_scores(valid)[valid.mask]))
    qt = m.base(raw_scores(test)[test.mask])
    if method == "isotonic":  # past the end blocks, each pooled to TAIL: past the validation range
        lo, hi = qv[0], qv[-1]
    else:  # past the TAIL-th most extreme validation score
        lo, hi = qv[TAIL - 1], qv[-TAIL]
    assert row["beyond support high"] == (qt > hi).sum() > 0
    assert row["beyond support low"] == (qt < lo).sum()
    assert row["beyond support"] == row["beyond support low"] + row["beyond support high"]
    text = a.finding("calibration")
    assert f"{int(row['beyond support'])} test candidates" in text and f"{TAIL}" in text


# ------------------------------------------------------------------------------ ties
def test_the_coverage_cut_answers_the_closest_share_not_below_the_target():
    assert _coverage_cut(np.arange(10.0), 0.8) == 2.0  # answers 8 of 10, not 9
    rng = np.random.default_rng(0)
    for _ in range(200):
        conf = rng.choice(np.r_[0.0, rng.random(8)], size=int(rng.integers(5, 80)))  # heavy ties
        target = float(rng.uniform(0.05, 1.0))
        cut = _coverage_cut(conf, target)
        share = (conf >= cut).mean()
        shares = [(conf >= c).mean() for c in np.unique(conf)]
        assert share >= target and share == min(s for s in shares if s >= target)


def test_every_sentence_about_the_abstain_rule_is_what_it_does_on_tied_lists():
    """Many lists share a margin of 0 (their top two candidates tie): a cut on the margin cannot answer 80% of the
    validation queries, so the rule takes a confidence whose cut can, and the page says what it does answer, on
    validation and on test."""
    from calibrank.assess.deploy.fit import TIE_SLACK, raw_scores
    from calibrank.assess.numbers import pct
    from calibrank.assess.page.render import render

    valid, test = _run(300, 2, "v", tied=True), _run(300, 1, "t", tied=True)
    a = assess(test, valid, map="isotonic", coverage=0.8, **FAST)
    cal = a.calibrator
    took = ~cal.abstain(raw_scores(valid), valid.mask)
    conf = cal.confidence(raw_scores(valid), valid.mask)
    from calibrank.assess.deploy.calibrator import list_confidence

    raw = raw_scores(valid)
    margin = list_confidence("margin", raw, np.where(valid.mask, cal.predict_proba(raw), 0.0), valid.mask, None)
    assert (margin == 0).mean() > 0.2  # the case at hand: a share of lists has a margin of 0
    from calibrank.assess.deploy.fit import _coverage_cut

    by_margin = (margin >= _coverage_cut(margin, 0.8)).mean()
    assert by_margin > 0.8 + TIE_SLACK  # a cut on the margin answers far more than asked
    assert 0.8 <= took.mean() < by_margin  # the chosen confidence's cut comes nearer the share asked
    answered = ~cal.abstain(raw_scores(test), test.mask)
    text = a.finding("answer or abstain")
    assert f"it answers {pct(took.mean())} of them" in text
    assert f"on the test queries it answers {pct(answered.mean())} of them" in text
    page = render(a, name="tied")
    box = page.split("<h2>What to deploy</h2>")[1].split("</div>")[0]
    assert f"it answers {pct(took.mean())} of the validation queries" in box
    r = a.abstain_rule.iloc[0]
    assert r["valid answered"] == took.sum() and r["valid coverage"] == took.mean()
    assert r["valid tied at cut"] == (conf == cal.abstain_rule.cut).mean()
    assert r["answered"] == answered.sum() and r["coverage"] == answered.mean()
    from calibrank.assess.numbers import threshold

    assert f"<b>{threshold(cal.abstain_rule.cut)}</b>" in box


# ------------------------------------------------------------------------------ the page
class _Titles(HTMLParser):
    """``(text, title)`` of each ``th``, ``td`` and ``abbr`` with a title, and the text of the glossary block."""

    def __init__(self) -> None:
        super().__init__()
        self.titles: list[tuple[str, str]] = []
        self.open: list[tuple[str, str | None, list[str]]] = []
        self.terms: list[str] = []
        self.in_terms = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("th", "td", "abbr"):
            self.open.append((tag, a.get("title"), []))
        if tag == "dl" and a.get("class") == "terms":
            self.in_terms = True

    def handle_endtag(self, tag):
        if tag in ("th", "td", "abbr") and self.open:
            _, title, text = self.open.pop()
            if title:
                self.titles.append(("".join(text).strip(), title))
            if self.open:
                self.open[-1][2].extend(text)
        if tag == "dl":
            self.in_terms = False

    def handle_data(self, data):
        if self.open:
            self.open[-1][2].append(data)
        if self.in_terms:
            self.terms.append(data)


@pytest.fixture(scope="module")
def pages():
    """Two assessments and their pages: a cutoff certified, and none (a target no cutoff reaches)."""
    from calibrank.assess.page.render import render

    out = {}
    for name, precision in (("certified", 0.7), ("none", 0.995)):
        a = assess(_run(300, 1, "t", gap=3.0), _run(300, 2, "v", gap=3.0), precision=precision, **FAST)
        out[name] = (a, render(a, name=name))
    return out


def test_every_measure_says_what_it_is_on_hover_and_in_the_glossary(pages):
    a, page = pages["certified"]
    seen = _Titles()
    seen.feed(page)
    named = {
        term: [title for text, title in seen.titles if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w@])", text)]
        for term in TERMS
    }
    assert not [t for t, titles in named.items() if not titles], "named on the page with no title"
    from calibrank.assess.page.render import define

    glossary = " ".join(seen.terms)
    for term in TERMS:
        sentence = define(term)
        assert sentence and ("better" in sentence or term in ("qhat", "list confidence")), term
        assert sentence in glossary and sentence in named[term], term
    assert "higher is better" in define("nDCG@10") and "lower is better" in define("AUGRC")


def test_the_code_shows_only_calls_that_work(pages, tmp_path):
    a, page = pages["certified"]
    assert a.calibrator.cutoff.raw is not None and "cal.keep(scores)" in page
    b, none = pages["none"]
    assert b.calibrator.cutoff.raw is None
    code = none.split("<pre>")[1].split("</pre>")[0]
    assert "cal.keep" not in code and "score_threshold" not in none
    assert "cal.predict_proba(scores)" in code and "cal.abstain(" in code
    cal = Calibrator.load(b.calibrator.save(tmp_path / "c.json"))
    scores = np.array([[2.0, 0.5, -1.0]])
    for call in re.findall(r"^(cal\.\w+)\(", code, re.MULTILINE):  # each call shown runs
        getattr(cal, call.removeprefix("cal."))(scores)


def test_a_number_reads_the_same_in_the_box_the_sentence_the_table_and_the_csv(pages, tmp_path):
    a, page = pages["certified"]
    cut = a.calibrator.cutoff.raw
    box = page.split("<h2>What to deploy</h2>")[1].split("</div>")[0]
    shown = re.search(r"raw score is at least <b>([^<]+)</b>", box).group(1)
    assert f"score_threshold={shown}" in page
    assert f"at least {shown} " in a.finding("thresholds")
    table = page.split("<h3>The certified cutoff</h3>")[1].split("</table>")[0]
    assert f">{shown}</td>" in table
    from calibrank.assess.numbers import threshold

    assert shown == threshold(cut)
    a.save(tmp_path)
    back = pd.read_csv(tmp_path / "threshold.csv")
    assert back["cutoff"].iloc[0] == cut  # the CSV holds the number itself


def test_csvs_hold_counts_as_integers_and_no_float_noise(pages, tmp_path):
    a, _ = pages["none"]
    a.save(tmp_path)
    cells = pd.read_csv(tmp_path / "threshold.csv", dtype=str, keep_default_na=False)
    assert cells["test kept"].iloc[0] == "0" and cells["valid kept"].iloc[0] == "0"  # never 0.0
    for name in a.tables():
        text = (tmp_path / f"{name}.csv").read_text()
        for number in re.findall(r"(?<![\w.])\d+\.\d+", text):
            assert not re.search(r"(0{6,}|9{6,})\d$", number), (name, number)  # ...000003 / ...99995
    from calibrank.assess.numbers import COUNTS, csv_frame

    for name, df in a.tables().items():
        back = pd.read_csv(tmp_path / f"{name}.csv")
        cells = pd.read_csv(tmp_path / f"{name}.csv", dtype=str, keep_default_na=False)
        for c in set(df.columns) & COUNTS:  # 847, never 847.0
            assert cells[c].str.fullmatch(r"\d*").all(), (name, c, list(cells[c]))
        for c in df.columns:  # every number read back is the one computed, to float noise
            if pd.api.types.is_float_dtype(df[c]) and c not in COUNTS:
                assert np.allclose(back[c], df[c], rtol=1e-14, atol=0, equal_nan=True), (name, c)
    noisy = pd.DataFrame({"test kept": [847.0, np.nan], "x": [0.23987500000000003, 5 / 6]})
    assert csv_frame(noisy).to_csv(index=False) == "test kept,x\n847,0.239875\n,0.8333333333333334\n"


@pytest.mark.parametrize(
    "module", ["calibrank.assess.numbers", "calibrank.assess.deploy.maps", "calibrank.assess.deploy.fit"]
)
def test_the_examples_of_the_page_modules_run(module):
    mod = importlib.import_module(module)
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(mod):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
