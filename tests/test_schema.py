import pytest

from calibrank.study.data import DataError, Dialogue, Example, RankingQuery, normalise_text


def test_records_clean_whitespace():
    e = Example("e1", ("  hi\n there ",), " fine\tthanks ")
    assert e.context == ("hi there",) and e.response == "fine thanks"


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: Example("e1", (), "r"), "empty context"),
        (lambda: Example("e1", ("  ",), "r"), "empty context utterance 0"),
        (lambda: Example("e1", ("c",), "   "), "empty response"),
        (lambda: RankingQuery("q", ("c",), ("a", "b"), (1,)), "2 candidates but 1 labels"),
        (lambda: RankingQuery("q", ("c",), ("a", "b"), (1, 2)), "labels must be 0 or 1"),
        (lambda: RankingQuery("q", ("c",), ("a", ""), (1, 0)), "empty candidate 1"),
        (lambda: Dialogue("d", ("a", "b"), speakers=("x",)), "1 speakers for 2 utterances"),
    ],
)
def test_malformed_records_are_rejected_with_their_id(make, needle):
    with pytest.raises(DataError, match=needle) as info:
        make()
    assert "'e1'" in str(info.value) or "'q'" in str(info.value) or "'d'" in str(info.value)


def test_normalise_text_folds_case_punctuation_and_whitespace():
    assert normalise_text("  Hello\n  World ") == normalise_text("hello world")
    assert normalise_text("Hello, world!") == normalise_text("hello world")
    assert normalise_text("hello world") != normalise_text("hello word")
    assert normalise_text(":)") == ":)" and normalise_text(":)") != normalise_text(":(")
