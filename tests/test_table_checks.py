"""The building blocks of every notebook check (calibrank.table_checks), on hand-made tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank import table_checks as tc

T = pd.DataFrame({"ranker": ["bert", "bert", "sngp"], "corpus": ["a", "b", "a"], "R@1": [0.5, np.nan, 1.2]})
KEYS = ("ranker", "corpus")


def test_rows_are_named_by_their_values_or_with_their_columns():
    row = T.iloc[0]
    assert tc.describe(row, KEYS) == "bert · a"
    assert tc.named(row, (*KEYS, "R@1")) == "ranker=bert, corpus=a, R@1=0.5"
    assert tc.fmt(1 / 3) == "0.333333" and tc.fmt(np.int64(4)) == "4" and tc.fmt("x") == "'x'"


def test_expected_keys_each_once_or_each_n_times():
    assert tc.rows_expected("t", T, KEYS, [("bert", "a"), ("bert", "b"), ("sngp", "a")]) == []
    assert tc.rows_expected("t", T, KEYS, [("bert", "a"), ("sngp", "a"), ("sngp", "b")]) == [
        "t: 0 row(s) for sngp · b, expected 1", "t: 1 unexpected row(s) for bert · b, expected none"]
    doubled = pd.concat([T, T])
    assert tc.rows_expected("t", doubled, KEYS, [("bert", "a"), ("bert", "b"), ("sngp", "a")], each=2) == []
    assert tc.rows_expected("t", doubled, ("ranker",), [("bert",), ("sngp",)], each=2, label=tc.named) == [
        "t: 4 row(s) for ranker=bert, expected 2"]


def test_range_checks_fail_on_nan_unless_allowed_and_respect_an_open_end():
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1) == [
        "t: bert · b: R@1 = nan, expected a number in [0, 1]", "t: sngp · a: R@1 = 1.2, expected a number in [0, 1]"]
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1.2, allow_nan=True) == []
    assert tc.in_range("t", T, "R@1", KEYS, 0, 1.2, hi_open=True, allow_nan=True, label=tc.named) == [
        "t: ranker=sngp, corpus=a: R@1 = 1.2, expected a number in [0, 1.2)"]
    assert tc.not_nan("t", T, ["R@1", "corpus"], KEYS) == ["t: bert · b: R@1 is NaN, expected a value"]


def test_failing_rows_columns_and_counts():
    ok = T["R@1"] < 1  # NaN compares False: not ok
    assert tc.rows_failing("t", T, ok, KEYS, "R@1 < 1", ["R@1"]) == [
        "t: bert · b: expected R@1 < 1, found R@1 nan", "t: sngp · a: expected R@1 < 1, found R@1 1.2"]
    assert tc.rows_failing("t", T, pd.array([True, pd.NA, True], dtype="boolean"), KEYS, "x", []) == [
        "t: bert · b: expected x, found "]
    assert tc.missing_columns("t", T, ["ranker", "ECE", "MAP"]) == [
        "t: no column 'ECE', 'MAP'; expected the columns ['ranker', 'ECE', 'MAP']"]
    assert tc.count_problems("t", T, 3, "why") == [] and tc.count_problems("t", T, 4, "why") == ["t: 3 rows, expected 4 (why)"]
