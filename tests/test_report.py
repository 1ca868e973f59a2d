"""Tests of calibrank.report: the front page built from executed notebooks and exported tables (all synthetic)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from calibrank import report, study as st
from calibrank.efficiency import efficiency_table
from test_study import write_synthetic_study

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(*outputs: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "x", "outputs": list(outputs)}


def _table(html: str = "<table class='dataframe'><tr><th>a</th></tr><tr><td>1</td></tr></table>") -> dict:
    return {"output_type": "execute_result", "data": {"text/html": f"<div><style scoped>x</style>{html}</div>",
                                                       "text/plain": "a"}, "metadata": {}}


def _figure() -> dict:
    return {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}, "metadata": {}}


def _notebook(cells: list[dict], seconds: float, params: dict | None = None) -> dict:
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"papermill": {"duration": seconds, "end_time": "2026-01-01T10:00:00.000000",
                                       "parameters": params or {"profile": "smoke"}}}}


def write_executed_notebooks(root) -> None:
    rdir = root / "reports" / "smoke"
    rdir.mkdir(parents=True, exist_ok=True)
    books = {
        "01_data": _notebook([_md("# 01 · Data: dialogues into examples\nReads every corpus."),
                              _md("## Corpus statistics\nDialogues and examples per split."), _code(_table()),
                              _md("## Lengths\nContext and response lengths."), _code(_figure()),
                              _md("## Nothing shown\nA section without output."), _code()], 3.5),
        "03_train-bert-chitchat": _notebook([_md("# 03 · Train a ranker\nTrains one ranker."),
                                             _md("## Train\nLoss curve."), _code(_figure())], 12.0,
                                            {"profile": "smoke", "ranker": "bert", "train_corpus": "chitchat"}),
        "03_train-ensemble-chitchat": _notebook([_md("# 03 · Train a ranker\nTrains one ranker."),
                                                 _md("## Train\nLoss curve."), _code(_figure())], 20.0,
                                                {"profile": "smoke", "ranker": "ensemble", "train_corpus": "chitchat"}),
        "04_calibration": _notebook([_md("# 04 · Calibration\nTables 1-2."),
                                     _md("## Table 1 · BERT under shift\nIt shows bert's R10@1 and ECE with `code`."),
                                     _code(_table()),
                                     _md("The same in full."), _code(_table()),
                                     _md("## Files\nWrites CSV."), _code(_table())], 6.0),
    }
    for name, nb in books.items():
        (rdir / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture
def built(tmp_root):
    data = st.load_study(write_synthetic_study(tmp_root))
    from calibrank.analysis import verdicts

    st.export_tables("smoke", {"table1_bert": st.table1(data), "table2_ece_change": st.table2(data),
                               "figure2_ece_by_negatives": st.ece_by_negatives(data),
                               "paper2023_in_domain": st.paper2023_tables(data, st.interval_table(data))["in-domain"],
                               "claims_04_calibration": verdicts.calibration_claims(data)}, notebook="04_calibration")
    st.export_tables("smoke", {"efficiency": efficiency_table(pd.DataFrame(
        {"ranker": ["bert", "mc_dropout"], "parameters": [10, 10], "ms/query": [1.0, 4.0]}))}, notebook="07_efficiency")
    st.export_tables("smoke", {"findings_08": pd.DataFrame(
        {"section": ["1 prior shift"], "finding": ["Prior correction removes 95% of bert's ECE at 1:9"]})},
        notebook="08_beyond")
    write_executed_notebooks(tmp_root)
    path = report.build_index("smoke")
    return path.read_text(encoding="utf-8")


def test_report_has_every_section(built):
    for title in report.SECTION_TITLES:
        assert f">{title.replace(chr(39), '&#x27;')}</h2>" in built, title
    for title in ("01 · Data: dialogues into examples", "Corpus statistics", "Lengths", "03 · Train a ranker",
                  "04 · Calibration", "Table 1 · BERT under shift", "Table 1 · bert in and out of distribution",
                  "Wall time of each step"):
        assert title in built, title


def test_report_embeds_figures_and_tables_and_links(built):
    assert built.count("data:image/png;base64,") == 3  # 01's figure and both 03 runs
    assert "<style scoped>" not in built and "It shows bert&#x27;s R10@1 and ECE with <code>code</code>." in built
    assert "The same in full." in built and "Writes CSV." not in built and "Nothing shown" not in built
    assert "href='tables/table1_bert.csv'" in built and "href='tables/efficiency.csv'" in built
    assert "href='01_data.html'" in built and "href='03_train-ensemble-chitchat.html'" in built
    assert "41.5 s" in built  # total wall time of the four notebooks
    assert "<th>estimate</th>" not in built  # no reports/smoke/eta.json: no estimate column


def test_report_states_the_caveats_and_verdicts(built):
    assert "MSDialog" in built and "MANtIS" in built and "UDC_DSTC8" in built
    assert "Ties count against the relevant candidate" in built
    assert "tiny, randomly initialised models" in built  # the smoke profile's backbone is tiny-random
    assert "badge yes" in built and "replicates" in built
    assert "ensemble has lower balanced ECE (debiased) than bert" in built
    assert "mc_dropout has lower balanced ECE (debiased) than bert" in built
    assert "(80% power)</b>" in built or "underpowered: the paper&#x27;s effect" in built  # beside a verdict that did not decide
    assert "<th>detectable</th>" in built and "<th>power</th>" in built
    assert "These verdicts come from one training seed" in built
    assert "<h4>Prior shift</h4>" in built and "Prior correction removes 95% of bert&#x27;s ECE at 1:9" in built  # the smoke profile lists one seed
    assert "1 BM25 negative per positive" in built  # the protocol each side used


def test_report_without_notebooks_says_what_to_run(tmp_root):
    with pytest.raises(FileNotFoundError, match="make report PROFILE=smoke"):
        report.build_index("smoke")


def test_report_cli_usage():
    assert report.main([]) == 2


def test_notebook_sections_split_on_headings():
    nb = _notebook([_md("# T\nblurb"), _md("## A\nfirst"), _code(_table(), _figure()), _md("more text"), _code(_figure())], 1.0)
    secs = report.notebook_sections(nb)
    assert [s["title"] for s in secs] == ["A", ""]
    assert [k for k, _ in secs[0]["outputs"]] == ["table", "png"] and secs[1]["parent"] == "A"
