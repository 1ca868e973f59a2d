import pytest

from calibrank.study.data import (
    TURN_SEP,
    UTTERANCE_SEP,
    Dialogue,
    dialogue_examples,
    format_context,
    split_dialogues,
    subsample,
)
from calibrank.study.settings.choices import ContextStyle
from calibrank.study.settings.schema import SplitConfig


def _dialogues(n, length=4):
    return [Dialogue(f"d{i}", tuple(f"u{i}-{t}" for t in range(length))) for i in range(n)]


def test_split_is_by_dialogue_disjoint_complete_and_seeded():
    ds = _dialogues(101)
    a = split_dialogues(ds, SplitConfig(), seed=7)
    ids = {s: {d.dialogue_id for d in v} for s, v in a.items()}
    assert (
        ids["train"].isdisjoint(ids["valid"])
        and ids["train"].isdisjoint(ids["test"])
        and ids["valid"].isdisjoint(ids["test"])
    )
    assert set().union(*ids.values()) == {d.dialogue_id for d in ds}
    assert (len(a["valid"]), len(a["test"])) == (10, 10)
    assert split_dialogues(ds, SplitConfig(), seed=7) == a
    assert split_dialogues(ds, SplitConfig(), seed=8) != a
    ex = {s: {e.dialogue_id for e in dialogue_examples(v)} for s, v in a.items()}
    assert ex["train"].isdisjoint(ex["test"])


def test_split_needs_three_dialogues():
    with pytest.raises(ValueError, match="need at least 3"):
        split_dialogues(_dialogues(2), SplitConfig(), seed=0)
    assert all(len(v) == 1 for v in split_dialogues(_dialogues(3), SplitConfig(), seed=0).values())


def test_examples_every_position_or_last_with_context_cap():
    (d,) = _dialogues(1, length=5)
    allpos = dialogue_examples([d])
    assert [e.response for e in allpos] == ["u0-1", "u0-2", "u0-3", "u0-4"]
    assert allpos[-1].context == ("u0-0", "u0-1", "u0-2", "u0-3") and allpos[0].eid == "d0-t1"
    (last,) = dialogue_examples([d], positions="last", max_context_utterances=2)
    assert last.context == ("u0-2", "u0-3") and last.response == "u0-4"
    assert dialogue_examples([Dialogue("solo", ("only one",))]) == []


def test_format_context_styles():
    ctx = ["a", "b", "c"]
    assert format_context(ctx) == "a b c"
    assert (
        format_context(ctx, ContextStyle.separators)
        == f"a {UTTERANCE_SEP} b {UTTERANCE_SEP} {TURN_SEP} c {UTTERANCE_SEP}"
    )
    assert format_context(ctx, "utterance_sep") == f"a {UTTERANCE_SEP} b {UTTERANCE_SEP} c {UTTERANCE_SEP}"


def test_subsample_keeps_order_and_is_seeded():
    items = list(range(100))
    s = subsample(items, 10, seed=3)
    assert s == sorted(s) and len(set(s)) == 10
    assert s == subsample(items, 10, seed=3) and s != subsample(items, 10, seed=4)
    assert subsample(items, None, 0) == items and subsample(items, 500, 0) == items
