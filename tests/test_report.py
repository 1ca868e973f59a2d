"""Tests of calibrank.study.pipeline.report: the front page built from executed notebooks and exported tables (all synthetic)."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from calibrank.study.analysis import study as st
from calibrank.study.analysis import verdicts
from calibrank.study.analysis.efficiency import efficiency_table
from calibrank.study.analysis.exports import TableFileError
from calibrank.study.pipeline import report
from test_make_graph import make_root  # noqa: F401 (a fixture: a project root for make)
from test_study import write_synthetic_study

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(*outputs: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "x", "outputs": list(outputs)}


def _table(html: str = "<table class='dataframe'><tr><th>a</th></tr><tr><td>1</td></tr></table>") -> dict:
    return {
        "output_type": "execute_result",
        "data": {"text/html": f"<div><style scoped>x</style>{html}</div>", "text/plain": "a"},
        "metadata": {},
    }


def _figure() -> dict:
    return {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}, "metadata": {}}


def _notebook(cells: list[dict], seconds: float, params: dict | None = None) -> dict:
    return {
        "cells": cells,
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "papermill": {
                "duration": seconds,
                "end_time": "2026-01-01T10:00:00.000000",
                "parameters": params or {"profile": "smoke"},
            }
        },
    }


class _Page(HTMLParser):
    """What a reader sees: the text (entities decoded, whitespace collapsed, a space between blocks and
    cells), the headings and the links."""

    BLOCKS = {
        "p",
        "div",
        "table",
        "tr",
        "td",
        "th",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "br",
        "details",
        "summary",
        "figure",
        "style",
        "title",
    }

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.chunks, self.headings, self.links, self.tags, self._heading = [], [], [], [], None
        self.feed(html)
        self.text = " ".join("".join(self.chunks).split())

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.chunks.append(" " if tag in self.BLOCKS else "")
        if tag in ("h1", "h2", "h3", "h4", "h5"):
            self._heading = (tag, [])
        if tag == "a":
            self.links.append(dict(attrs).get("href"))

    def handle_endtag(self, tag):
        self.chunks.append(" " if tag in self.BLOCKS else "")
        if self._heading and tag == self._heading[0]:
            self.headings.append((tag, " ".join("".join(self._heading[1]).split())))
            self._heading = None

    def handle_data(self, data):
        self.chunks.append(data)
        if self._heading:
            self._heading[1].append(data)


def write_executed_notebooks(root) -> None:
    rdir = root / "reports" / "smoke"
    rdir.mkdir(parents=True, exist_ok=True)
    books = {
        "01_data": _notebook(
            [
                _md("# 01 · Data: dialogues into examples\nReads every corpus."),
                _md("## Corpus statistics\nDialogues and examples per split."),
                _code(_table()),
                _md("## Lengths\nContext and response lengths."),
                _code(_figure()),
                _md("## Nothing shown\nA section without output."),
                _code(),
            ],
            3.5,
        ),
        "03_train-bert-chitchat": _notebook(
            [_md("# 03 · Train a ranker\nTrains one ranker."), _md("## Train\nLoss curve."), _code(_figure())],
            12.0,
            {"profile": "smoke", "ranker": "bert", "train_corpus": "chitchat"},
        ),
        "03_train-ensemble-chitchat": _notebook(
            [_md("# 03 · Train a ranker\nTrains one ranker."), _md("## Train\nLoss curve."), _code(_figure())],
            20.0,
            {"profile": "smoke", "ranker": "ensemble", "train_corpus": "chitchat"},
        ),
        "04_calibration": _notebook(
            [
                _md("# 04 · Calibration\nTables 1-2."),
                _md("## Table 1 · BERT under shift\nIt shows bert's R10@1 and ECE with `code`."),
                _code(_table()),
                _md("The same in full."),
                _code(_table()),
                _md("## Files\nWrites CSV."),
                _code(_table()),
            ],
            6.0,
        ),
    }
    for name, nb in books.items():
        (rdir / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")


def export_study_tables(root, claim_suffix: str = "") -> None:
    data = st.load_study(write_synthetic_study(root))
    claims = verdicts.calibration_claims(data)
    claims["claim"] = claims["claim"] + claim_suffix
    st.export_tables(
        "smoke",
        {
            "table1_bert": st.table1(data),
            "table2_ece_change": st.table2(data),
            "figure2_ece_by_negatives": st.ece_by_negatives(data),
            "paper2023_in_domain": st.paper2023_tables(data, st.interval_table(data))["in-domain"],
            "claims_04_calibration": claims,
        },
        notebook="04_calibration",
    )
    st.export_tables(
        "smoke",
        {
            "efficiency": efficiency_table(
                pd.DataFrame({"ranker": ["bert", "mc_dropout"], "parameters": [10, 10], "ms/query": [1.0, 4.0]})
            )
        },
        notebook="07_efficiency",
    )
    st.export_tables(
        "smoke",
        {
            "findings_08": pd.DataFrame(
                {"section": ["1 prior shift"], "finding": ["Prior correction removes 95% of bert's ECE at 1:9"]}
            )
        },
        notebook="08_beyond",
    )


@pytest.fixture
def built(tmp_root):
    export_study_tables(tmp_root)
    write_executed_notebooks(tmp_root)
    path = report.build_index("smoke")
    return path.read_text(encoding="utf-8")


def test_report_has_every_section(built):
    page = _Page(built)
    assert [h for tag, h in page.headings if tag == "h2"] == list(report.SECTION_TITLES)
    for title in (
        "01 · Data: dialogues into examples",
        "Corpus statistics",
        "Lengths",
        "03 · Train a ranker",
        "04 · Calibration",
        "Table 1 · BERT under shift",
        "Table 1 · bert in and out of distribution",
        "Wall time of each step",
    ):
        assert title in {h for _, h in page.headings}, title
    assert [f"#{h}" for h in ("setup", "do-the-rankers-rank", "the-papers-numbers-beside-ours")] == [
        link for link in page.links if link in ("#setup", "#do-the-rankers-rank", "#the-papers-numbers-beside-ours")
    ]


def test_report_embeds_figures_and_tables_and_links(built):
    page = _Page(built)
    assert built.count("data:image/png;base64,") == 3  # 01's figure and both 03 runs
    assert "<style scoped>" not in built and "<code>code</code>" in built
    assert "It shows bert's R10@1 and ECE with code." in page.text
    assert "The same in full." in page.text and "Writes CSV." not in page.text and "Nothing shown" not in page.text
    assert {
        "tables/table1_bert.csv",
        "tables/efficiency.csv",
        "01_data.html",
        "04_calibration.html",
        "03_train-bert-chitchat.html",
        "03_train-ensemble-chitchat.html",
    } <= set(page.links)
    assert "sum 41.5 s" in page.text  # total wall time of the four notebooks
    assert "<th>estimate</th>" not in built  # no reports/smoke/eta.json: no estimate column
    assert "The estimate is the one" not in page.text


def test_report_states_the_caveats_and_verdicts(built):
    page = _Page(built)
    assert "MSDialog" in page.text and "MANtIS" in page.text and "UDC_DSTC8" in page.text
    assert "Ties count against the relevant candidate" in page.text
    assert "tiny, randomly initialised models" in page.text  # the smoke profile's backbone is tiny-random
    assert 'class="badge yes"' in built and "replicates" in page.text
    assert "ensemble has lower balanced ECE (debiased) than bert" in page.text
    assert "mc_dropout has lower balanced ECE (debiased) than bert" in page.text
    assert "(80% power)" in page.text or "underpowered: the paper's effect" in page.text  # beside an undecided verdict
    assert "<th>detectable</th>" in built and "<th>power</th>" in built
    # the study trains on one corpus: Table 1's cross-domain claims keep their rows, not tested, saying why
    assert "2 not tested" in page.text and "not tested: rankers.train_corpora lists chitchat only" in page.text
    assert "when trained on another corpus than on chitchat (cross-domain)" in page.text
    assert "ours over 0 condition(s)" not in page.text and "ours: none" in page.text and "ours over" in page.text
    assert "These verdicts come from one training seed" in page.text  # the smoke profile lists one seed
    assert ("h4", "Prior shift") in page.headings and "Prior correction removes 95% of bert's ECE at 1:9" in page.text
    assert "1 BM25 negative per positive" in page.text  # the protocol each side used


def test_every_text_from_data_is_escaped(tmp_root):
    """A ``<script>`` in a claim, a ranker's name, a finding or a notebook's text reaches the reader as text."""
    export_study_tables(tmp_root, claim_suffix=" <script>alert('claim')</script>")
    st.export_tables(
        "smoke",
        {
            "findings_08": pd.DataFrame(
                {"section": ["1 <script>s</script>"], "finding": ["<script>alert('finding')</script>"]}
            )
        },
        notebook="08_beyond",
    )
    write_executed_notebooks(tmp_root)
    rdir = tmp_root / "reports" / "smoke"
    nb = json.loads((rdir / "03_train-bert-chitchat.ipynb").read_text(encoding="utf-8"))
    nb["metadata"]["papermill"]["parameters"]["ranker"] = "<script>alert('ranker')</script>"
    nb["cells"].append(_md("## <script>alert('title')</script>\n<img src=x onerror=alert(1)> and `<b>`"))
    nb["cells"].append(_code(_figure()))
    (rdir / "03_train-bert-chitchat.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    built = report.build_index("smoke").read_text(encoding="utf-8")
    page = _Page(built)
    assert "<script" not in built and "<img src=x" not in built
    assert "script" not in page.tags and page.tags.count("img") == 4  # the figures only: 01's, both runs', the new one
    for text in (
        "<script>alert('claim')</script>",
        "<script>alert('ranker')</script> trained on chitchat",
        "<script>alert('finding')</script>",
        "<script>alert('title')</script>",
        "<img src=x onerror=alert(1)>",
    ):
        assert text in page.text, text
    assert "<code>&lt;b&gt;</code>" in built


def test_notebook_markdown_is_rendered_and_its_links_kept(tmp_root):
    rdir = tmp_root / "reports" / "smoke"
    rdir.mkdir(parents=True)
    nb = _notebook(
        [
            _md("# T\nSee **bold**, *em* and [the paper](https://example.org/p.pdf)."),
            _md("## A [link](javascript:alert(1))\nfirst"),
            _code(_table()),
        ],
        1.0,
    )
    (rdir / "01_data.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    built = report.build_index("smoke").read_text(encoding="utf-8")
    assert 'See <strong>bold</strong>, <em>em</em> and <a href="https://example.org/p.pdf">the paper</a>.' in built
    assert "javascript:" not in _Page(built).links  # an unsafe link stays text


def test_report_with_notebooks_only_says_what_is_missing(tmp_root):
    write_executed_notebooks(tmp_root)
    page = _Page(report.build_index("smoke").read_text(encoding="utf-8"))
    for missing in (
        "No metrics yet (notebook 04 writes them).",
        "No claims tested yet: notebooks 04–06 test them.",
        "No analysis tables yet: run notebooks 04–07.",
        "No findings yet: notebook 08 writes them.",
        "Every table is also a CSV file: none yet.",
        "seeds in the Predictions: none yet",
        "not prepared yet (notebook 01)",
    ):
        assert missing in page.text, missing
    assert not [link for link in page.links if link.startswith("tables/")]


def test_report_folds_big_tables_and_the_full_version_of_a_table(tmp_root):
    rdir = tmp_root / "reports" / "smoke"
    rdir.mkdir(parents=True)
    rows = "".join(f"<tr><td>{i}</td></tr>" for i in range(30))
    nb = _notebook(
        [
            _md("# T\nblurb"),
            _md("## Small\nshown"),
            _code(_table()),
            _md("## Big\nfolded"),
            _code(_table(f"<table><tr><th>a</th></tr>{rows}</table>")),
            _md("In full."),
            _code(_table()),
        ],
        1.0,
    )
    (rdir / "01_data.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    built = report.build_index("smoke").read_text(encoding="utf-8")
    assert built.count("<details><summary>show the table") == 2
    assert "show the table (30 rows)" in built and "show the table (1 rows)" in built


def test_report_shows_the_estimate_beside_each_step(tmp_root):
    write_executed_notebooks(tmp_root)
    steps = [
        {
            "name": name,
            "phase": "x",
            "output": f"reports/smoke/{name}.ipynb",
            "trains": [],
            "ranker": None,
            "seconds": sec,
            "pending": True,
        }
        for name, sec in (("01_data", 30.0), ("04_calibration", 150.0))
    ]
    eta = {
        "profile": "smoke",
        "created": "2026-01-01T09:00:00+00:00",
        "started": 0.0,
        "jobs": 2,
        "cores": 4,
        "seconds": 200.0,
        "rates": {"device": "cpu", "bf16": False, "train": 12.34, "infer": 567.8, "threads": 1},
        "steps": steps,
    }
    (tmp_root / "reports" / "smoke" / "eta.json").write_text(json.dumps(eta), encoding="utf-8")
    built = report.build_index("smoke").read_text(encoding="utf-8")
    page = _Page(built)
    assert "<th>estimate</th>" in built
    assert "01_data 3.5 s 30.0 s" in page.text and "03_train-bert-chitchat 12.0 s – " in page.text
    assert (
        "sum 41.5 s 3.0 min elapsed – " in page.text
    )  # then the elapsed time calibrank.study.pipeline.eta's schedule predicts
    assert (
        "(2026-01-01 09:00:00 UTC; 4 cores, cpu, bf16: no; measured 12.3 training and 568 inference pairs/s"
        in page.text
        and "for the 2 steps that run needed, 2 side by side" in page.text
    )


def test_report_without_notebooks_says_what_to_run(tmp_root):
    with pytest.raises(FileNotFoundError, match="make report PROFILE=smoke"):
        report.build_index("smoke")


def test_report_cli_usage():
    assert report.main([]) == 2


def test_notebook_sections_split_on_headings():
    nb = _notebook(
        [_md("# T\nblurb"), _md("## A\nfirst"), _code(_table(), _figure()), _md("more text"), _code(_figure())], 1.0
    )
    secs = report.notebook_sections(nb)
    assert [s["title"] for s in secs] == ["A", ""]
    assert [k for k, _ in secs[0]["outputs"]] == ["table", "png"] and secs[1]["parent"] == "A"


def test_the_package_ships_its_templates():
    """An installed calibrank finds the page's template and style: package-data lists every file they need."""
    root = Path(__file__).resolve().parent.parent
    patterns = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["calibrank"]
    templates = root / "lib" / "calibrank" / "study" / "pipeline" / "templates"
    files = [p.relative_to(root / "lib" / "calibrank").as_posix() for p in templates.iterdir()]
    assert {"study/pipeline/templates/report.html.j2", "study/pipeline/templates/report.css"} <= set(files)
    assert [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []


# ------------------------------------------------------------------------------ a damaged table
def _cut(path: Path, where: str) -> None:
    """Cut the CSV ``path`` short: before its last row (``row``), after the last row's first field separator
    (``field``: a comma outside quotes), or inside one of the last row's quoted texts (``text``)."""
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1  # where the last row starts
    quoted, field = False, None
    for i in range(last, len(data)):
        quoted ^= data[i : i + 1] == b'"'
        if data[i : i + 1] == b"," and not quoted:
            field = i + 1
            break
    path.write_bytes(data[: last if where == "row" else field if where == "field" else data.index(b'"', last) + 5])


@pytest.mark.parametrize("where", ["row", "field", "text"])
def test_a_cut_claims_table_names_itself_and_the_command_that_writes_it_again(tmp_root, capsys, where):
    """A claims table cut short gives one line naming the file and a command that makes it again, never a page
    with wrong counts (cut between rows or fields) nor a parser's error naming no file (cut inside a text)."""
    export_study_tables(tmp_root)
    write_executed_notebooks(tmp_root)
    rdir = tmp_root / "reports" / "smoke"
    table = rdir / "tables" / "claims_04_calibration.csv"
    tally = "2 replicates, 2 opposite direction, not significant, 1 contradicted, 2 not tested."
    assert tally in _Page(report.build_index("smoke").read_text(encoding="utf-8")).text  # the counts of the whole table
    _cut(table, where)
    with pytest.raises(TableFileError, match="claims_04_calibration.csv: sha256 .* differs from"):
        report.build_index("smoke")
    assert report.main(["smoke"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(table) in err
    advice = err.split("`")[-2]
    assert advice == (
        f"rm -f {table} {rdir / '04_calibration.ipynb'} {rdir / '04_calibration.html'} && "
        "make nb-04_calibration PROFILE=smoke"
    )


def test_a_table_written_without_its_record_is_refused(tmp_root):
    """A table whose sha256 was never recorded (an older version wrote it, or its writer died before the record):
    the page is not built from it."""
    export_study_tables(tmp_root)
    write_executed_notebooks(tmp_root)
    record = tmp_root / "reports" / "smoke" / "tables" / "claims_04_calibration.csv.sha256"
    record.unlink()
    with pytest.raises(TableFileError, match="no sha256 was recorded for it.*make nb-04_calibration PROFILE=smoke"):
        report.build_index("smoke")


def test_the_advice_for_a_damaged_table_runs_the_step_that_writes_it(make_root, monkeypatch):  # noqa: F811 (the fixture)
    """Run as a dry run in a tree where every step up to notebook 04 is made, each output newer than its inputs, the
    command a damaged claims table names plans 04 and its page (``make nb-04_calibration`` alone plans nothing)."""
    import os
    import re
    import shlex
    import subprocess
    import time

    from calibrank.study.pipeline import grid
    from calibrank.study.settings.config import load_config
    from test_make_graph import _env, _make, _planned

    root = make_root
    monkeypatch.setenv("CALIBRANK_ROOT", str(root))
    proc = _make(root, "-n", "nb-04_calibration", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.splitlines()[-1]
    assert _planned(root, command)  # nothing made yet: the first dry run plans (and keys the code)
    steps = grid.steps(load_config("smoke"))
    stamp = time.time()
    # the tables as 04 writes them: outputs of 04, stamped with the others below
    st.export_tables(
        "smoke",
        {name: pd.DataFrame({"a": [1, 2]}) for name in grid.TABLES["04_calibration"]},
        notebook="04_calibration",
    )
    for step in steps[: [s.name for s in steps].index("04_calibration") + 1]:
        for out in [*step.outputs, *([f"reports/smoke/{step.name}.html"] if step.notebook else [])]:
            path = root / out
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("{}")
            stamp += 1
            os.utime(path, (stamp, stamp))
    assert _planned(root, command) == set()  # "Nothing to be done": a bare make nb-04_calibration does nothing
    table = root / "reports" / "smoke" / "tables" / "claims_04_calibration.csv"
    _cut(table, "row")
    with pytest.raises(TableFileError) as err:
        report._tables("smoke")
    advice = re.search(r"`([^`]+)`\s*$", str(err.value)).group(1)
    *before, last = advice.split(" && ")
    for part in before:  # what comes before make runs as it is (removing the table, the notebook and its page)
        assert subprocess.run(part, shell=True, cwd=root, env=_env(root), timeout=60).returncode == 0
    assert shlex.split(last) == ["make", "nb-04_calibration", "PROFILE=smoke"]
    proc = _make(root, "-n", *shlex.split(last)[1:])
    assert proc.returncode == 0, proc.stderr
    assert _planned(root, proc.stdout.splitlines()[-1]) == {"04_calibration", "html"}
