"""calibrank.study.data.stats on tiny hand-made examples and query sets, against numbers worked out by hand.

Words are ``\\w+`` runs of the lower-cased text ("What's up?" is three words: what, s, up).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from calibrank.study.data.schema import Example, RankingQuery
from calibrank.study.data.stats import corpus_table, length_frame, overlap_table, side_by_side

# context utterances / context words / response words / domain
EXAMPLES = {
    "toy": {
        "train": [
            Example(
                "t1", ("Hello there!", "How are you?"), "Fine, thanks.", dialogue_id="d1", domain="a"
            ),  # 2 / 2+3 / 2
            Example("t2", ("What's up?",), "Not much", dialogue_id="d1", domain="b"),  # 1 / 3 / 2
            Example("t3", ("one two three four", "five six seven"), "ok", dialogue_id="d2", domain="a"),  # 2 / 7 / 1
        ],
        "test": [Example("t4", ("a b",), "x y z", dialogue_id="d3", domain="a")],  # 1 / 2 / 3
    },
    "other": {"train": [Example("o1", ("Is it raining today?",), "Yes, all day long!", dialogue_id="e1")]},  # 1 / 4 / 4
}
SUMMARY = {
    "corpora": {
        "toy": {"dialogues": {"train": 2, "test": 1}, "pool": {"train": 30, "test": 10}},
        "other": {"dialogues": {"train": 1}, "pool": {"train": 5}},
    }
}


def test_corpus_table_counts_and_lengths():
    t = corpus_table(EXAMPLES, SUMMARY)
    assert list(t["corpus"]) == ["toy", "toy", "other"] and list(t["split"]) == ["train", "test", "train"]
    train = t.iloc[0]
    assert train["dialogues"] == 2 and train["examples"] == 3 and train["response pool"] == 30
    assert train["context utterances (mean)"] == 1.67  # (2 + 1 + 2) / 3, rounded to 2 decimals
    assert train["context words (median)"] == 5.0  # median of 5, 3, 7
    assert train["response words (median)"] == 2.0  # median of 2, 2, 1
    assert train["domains"] == 2  # a, b
    test = t.iloc[1]
    assert (test["dialogues"], test["examples"], test["response pool"]) == (1, 1, 10)
    assert (test["context utterances (mean)"], test["context words (median)"], test["response words (median)"]) == (
        1.0,
        2.0,
        3.0,
    )
    other = t.iloc[2]
    assert (other["context words (median)"], other["response words (median)"], other["domains"]) == (
        4.0,
        4.0,
        1,
    )  # domain ""


def test_corpus_table_takes_dialogues_and_pool_from_the_summary():
    summary = {
        "corpora": {
            **SUMMARY["corpora"],
            "toy": {"dialogues": {"train": 7, "test": 8}, "pool": {"train": 9, "test": 11}},
        }
    }
    t = corpus_table({"toy": EXAMPLES["toy"]}, summary)
    assert t["dialogues"].tolist() == [7, 8] and t["response pool"].tolist() == [9, 11]
    with pytest.raises(KeyError):
        corpus_table({"nosuch": EXAMPLES["toy"]}, SUMMARY)


def test_length_frame_has_one_context_and_one_response_row_per_example():
    f = length_frame(EXAMPLES)
    assert list(f.columns) == ["corpus", "split", "part", "words"]
    expected = [
        ("toy", "train", "context", 5),
        ("toy", "train", "response", 2),
        ("toy", "train", "context", 3),
        ("toy", "train", "response", 2),
        ("toy", "train", "context", 7),
        ("toy", "train", "response", 1),
        ("toy", "test", "context", 2),
        ("toy", "test", "response", 3),
        ("other", "train", "context", 4),
        ("other", "train", "response", 4),
    ]
    assert list(f.itertuples(index=False, name=None)) == expected
    assert length_frame({}).empty


def _q(qid: str, context: tuple[str, ...], candidates: tuple[str, ...], labels: tuple[int, ...]) -> RankingQuery:
    return RankingQuery(qid, context, candidates, labels)


# context words {i, love, green, apples, do, you}; turns {i, love, green, apples} and {do, you}
CTX = ("I love green apples", "Do you?")
OVERLAP_SET = [
    _q("q1", CTX, ("I love apples too", "do you", "Bananas"), (1, 0, 0)),
    # relevant {no}: 0 with everything; negative {green, apples}: 2/6 with the context, 2/4 with turn 1
    _q("q2", CTX, ("No.", "green apples"), (1, 0)),
]


def test_overlap_table_by_hand():
    t = overlap_table({"set": OVERLAP_SET, "empty": []})
    row = t.set_index("query set").loc["set"]
    assert row["queries"] == 2 and row["candidates/query"] == 3  # the first query's
    # relevant: q1 "i love apples too" (3 shared of 7 context words; 3 of 5 with turn 1), q2 "no" (0, 0)
    assert row["overlap relevant"] == round((3 / 7 + 0) / 2, 4)
    assert row["closest turn relevant"] == round((3 / 5 + 0) / 2, 4)
    # negatives: q1 "do you" (2/6; 2/2 with turn 2), "bananas" (0; 0), q2 "green apples" (2/6; 2/4)
    assert row["overlap negatives"] == round((2 / 6 + 0 + 2 / 6) / 3, 4)
    assert row["closest turn negatives"] == round((1 + 0 + 0.5) / 3, 4)
    # echo share (closest turn >= 0.5): relevant 0.6 and 0; negatives 1, 0 and 0.5 (the boundary counts)
    assert row["echo share relevant"] == 0.5 and row["echo share negatives"] == round(2 / 3, 4)
    strict = overlap_table({"set": OVERLAP_SET}, echo=0.7).iloc[0]
    assert strict["echo share relevant"] == 0.0 and strict["echo share negatives"] == round(1 / 3, 4)
    empty = t.set_index("query set").loc["empty"]
    assert empty["queries"] == 0 and empty["candidates/query"] == 0 and math.isnan(empty["overlap relevant"])


def test_overlap_is_case_and_punctuation_blind():
    loud = [_q("q1", ("I LOVE green apples!!", "do YOU?"), ("i love, apples... too", "DO you", "bananas?"), (1, 0, 0))]
    quiet = [OVERLAP_SET[0]]
    cols = ["overlap relevant", "overlap negatives", "closest turn relevant", "closest turn negatives"]
    pd.testing.assert_frame_equal(overlap_table({"s": loud})[cols], overlap_table({"s": quiet})[cols])


def _sampler_sets():
    def qs(tag: str, qids):
        return [
            _q(
                qid,
                ("first turn", f"last turn of {qid}"),
                (f"{tag} neg1 {qid}", f"true {qid}", f"{tag} neg2 {qid}"),
                (0, 1, 0),
            )
            for qid in qids
        ]

    return {"random": qs("r", ["q2", "q1", "q3"]), "bm25": qs("b", ["q1", "q2", "q4"])}


def test_side_by_side_shows_the_shared_queries_with_each_samplers_first_negatives():
    t = side_by_side(_sampler_sets(), n=10, per_query=1)
    # only q1 and q2 are in both sets; rows in qid order
    assert t["qid"].tolist() == ["q1", "q2"]
    assert list(t.columns) == ["qid", "last context utterance", "true response", "random negatives", "bm25 negatives"]
    first = t.iloc[0]
    assert first["last context utterance"] == "last turn of q1" and first["true response"] == "true q1"
    assert first["random negatives"] == "r neg1 q1" and first["bm25 negatives"] == "b neg1 q1"
    two = side_by_side(_sampler_sets(), n=10, per_query=2)
    assert two.iloc[1]["bm25 negatives"] == "b neg1 q2 | b neg2 q2"


def test_side_by_side_picks_n_queries_by_seed_and_needs_shared_qids():
    sets = _sampler_sets()
    picks = {seed: side_by_side(sets, n=1, seed=seed)["qid"].tolist() for seed in range(6)}
    assert all(len(p) == 1 and p[0] in {"q1", "q2"} for p in picks.values())
    assert {p[0] for p in picks.values()} == {"q1", "q2"}  # the seed decides which
    assert side_by_side(sets, n=1, seed=3).equals(side_by_side(sets, n=1, seed=3))
    with pytest.raises(ValueError, match="share no qid"):
        side_by_side({"random": sets["random"][2:], "bm25": sets["bm25"][2:]})
