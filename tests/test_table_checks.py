"""The building blocks of every notebook check (calibrank.table_checks), on hand-made tables."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd

from calibrank import table_checks as tc

T = pd.DataFrame({"ranker": ["bert", "bert", "sngp"], "corpus": ["a", "b", "a"], "R@1": [0.5, np.nan, 1.2]})
KEYS = ("ranker", "corpus")


def test_rows_are_named_by_their_columns_and_values():
    assert tc.describe(T.iloc[0], (*KEYS, "R@1", "absent")) == "ranker=bert, corpus=a, R@1=0.5"
    assert tc.describe({"b": 0.1 + 0.2}, ("b",)) == "b=0.3"
    assert tc.fmt(1 / 3) == "0.333333" and tc.fmt(np.int64(4)) == "4" and tc.fmt("x") == "'x'"
    assert tc.fmt(np.bool_(True)) == "True" and tc.fmt("y" * 100).endswith("...")


def test_a_good_table_has_no_problems():
    good = T.assign(**{"R@1": [0.5, 0.25, 1.0]})
    assert tc.count_problems("t", good, 3) == []
    assert tc.rows_expected("t", good, KEYS, [("bert", "a"), ("bert", "b"), ("sngp", "a")]) == []
    assert tc.rows_failing("t", good, good["R@1"] > 0, KEYS, "R@1 > 0", ["R@1"]) == []
    assert tc.in_range("t", good, "R@1", KEYS, 0, 1) == []
    assert tc.not_nan("t", good, ["R@1", "corpus"], KEYS) == []


def test_row_count():
    assert tc.count_problems("t", T, 4, "why") == ["t: 3 rows, expected 4 (why)"]
    assert tc.count_problems("t", T.iloc[:1], 2) == ["t: 1 row, expected 2"]


def test_expected_keys_each_once_with_the_row_count_first():
    assert tc.rows_expected("t", T, KEYS, [("bert", "a"), ("sngp", "a"), ("sngp", "b")]) == [
        "t: 0 rows for ranker=sngp, corpus=b, expected 1",
        "t: 1 unexpected row for ranker=bert, corpus=b, expected none",
    ]  # 3 rows as expected: no count
    assert tc.rows_expected("t", T, KEYS, [("bert", "a")], what="one") == [
        "t: 3 rows, expected 1 (one)",
        "t: 1 unexpected row for ranker=bert, corpus=b, expected none",
        "t: 1 unexpected row for ranker=sngp, corpus=a, expected none",
    ]


def test_each_counts_the_rows_per_key():
    doubled = pd.concat([T, T])
    assert tc.rows_expected("t", doubled, KEYS, [("bert", "a"), ("bert", "b"), ("sngp", "a")], each=2) == []
    assert tc.rows_expected("t", doubled, ("ranker",), [("bert",), ("sngp",)], each=2) == [
        "t: 6 rows, expected 4",
        "t: 4 rows for ranker=bert, expected 2",
    ]
    assert tc.rows_expected("t", T, KEYS, [("bert", "a"), ("bert", "b"), ("sngp", "a")], each=2)[:2] == [
        "t: 3 rows, expected 6",
        "t: 1 row for ranker=bert, corpus=a, expected 2",
    ]


def test_failing_rows_name_table_row_expectation_and_values():
    ok = T["R@1"] < 1  # NaN compares False: not ok
    assert tc.rows_failing("t", T, ok, KEYS, "R@1 < 1", ["R@1", "corpus"]) == [
        "t: ranker=bert, corpus=b: expected R@1 < 1, found R@1 nan, corpus 'b'",
        "t: ranker=sngp, corpus=a: expected R@1 < 1, found R@1 1.2, corpus 'a'",
    ]
    assert tc.rows_failing("t", T, pd.array([True, pd.NA, True], dtype="boolean"), KEYS, "x", ["R@1"]) == [
        "t: ranker=bert, corpus=b: expected x, found R@1 nan"
    ]


def test_nan_fails_a_range_check_unless_allowed():
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1) == [
        "t: ranker=bert, corpus=b: expected R@1 in [0, 1], found R@1 nan",
        "t: ranker=sngp, corpus=a: expected R@1 in [0, 1], found R@1 1.2",
    ]
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1.2, allow_nan=True) == []
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1.2, high_open=True, allow_nan=True) == [
        "t: ranker=sngp, corpus=a: expected R@1 in [0, 1.2) or NaN, found R@1 1.2"
    ]
    assert tc.not_nan("t", T, ["R@1", "corpus"], KEYS) == [
        "t: ranker=bert, corpus=b: expected a value of R@1, found R@1 nan"
    ]


def test_the_table_checks_do_not_import_torch():
    code = "import sys, calibrank.table_checks; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
