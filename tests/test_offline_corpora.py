"""The offline corpora read from their PyPI packages: counts and first/last records pinned, plus the format rules on tiny files."""

import json
import logging

import pytest

from calibrank.study.data import DataError
from calibrank.study.data.chatterbot import read_chatterbot
from calibrank.study.data.chitchat import read_chitchat
from calibrank.study.data.splits import dialogue_examples


@pytest.fixture(scope="module")
def chitchat():
    return read_chitchat()


@pytest.fixture(scope="module")
def chatterbot():
    return read_chatterbot()


def test_chitchat_counts_and_first_and_last_records(chitchat):
    assert len(chitchat) == 7168
    first, last = chitchat[0], chitchat[-1]
    assert first.dialogue_id == "chitchat-a07edb12-6b91-4138-b11e-02421888d699"
    assert first.utterances[:2] == ("Hello How are you doing today?", "whats up MD im doing good how are you doing?")
    assert first.domain == "What's one thing your best friend doesn't know about you?" and len(first.utterances) == 35
    assert last.dialogue_id == "chitchat-adac5dae-e2df-4701-a0fc-d5feaedac7b1"
    assert last.utterances[-1] == "Honestly, I would probably fail all my classes because I google everything"
    # 4,018 conversations have two speakers; one of them is left with a single turn once its empty messages go
    assert sum(len(d.utterances) >= 2 for d in chitchat) == 4017
    assert len(dialogue_examples(chitchat)) == 131548


def test_chitchat_turns_alternate_speakers(chitchat):
    for d in chitchat[:500]:
        assert all(a != b for a, b in zip(d.speakers, d.speakers[1:]))


def test_chatterbot_counts_and_first_and_last_records(chatterbot):
    assert len(chatterbot) == 2025
    first, last = chatterbot[0], chatterbot[-1]
    assert first.dialogue_id == "chatterbot-ai-0" and first.domain == "AI"
    assert first.utterances[0] == "What is AI?"
    assert last.dialogue_id == "chatterbot-trivia-260"
    assert last.utterances == ("On every continent there is a city named what?", "Rome")
    assert len(dialogue_examples(chatterbot)) == 2306


def test_chatterbot_skips_the_malformed_shipped_entry_or_raises_when_strict(caplog):
    with caplog.at_level(logging.WARNING):
        read_chatterbot()
    assert "trivia.yml: conversation 13 is not a list of strings" in caplog.text
    with pytest.raises(DataError, match="trivia.yml: conversation 13"):
        read_chatterbot(strict=True)


def test_chitchat_format_rules_on_a_tiny_file(tmp_path):
    conv = {
        "c1": {
            "prompt": "pets",
            "messages": [
                [{"sender": "a", "text": "hi", "timestamp": "t"}, {"sender": "a", "text": "there", "timestamp": "t"}],
                [{"sender": "b", "text": "  ", "timestamp": "t"}],  # empty turn: dropped
                [{"sender": "a", "text": "anyone?", "timestamp": "t"}],  # then merges with a's first turn
                [{"sender": "b", "text": "yes", "timestamp": "t"}, {"sender": "b", "text": "", "timestamp": "t"}],
            ],
        }
    }
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(conv))
    (d,) = read_chitchat(path)
    assert d.utterances == ("hi there anyone?", "yes") and d.speakers == ("a", "b") and d.domain == "pets"


def test_chitchat_bad_input_names_the_file(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text('{"c1": {"messages": [[{"text": "no sender"}]]}}')
    with pytest.raises(DataError, match=r"dataset.json: conversation 'c1': turn 0 has a message without"):
        read_chitchat(path)
    path.write_text('{"c1": ')
    with pytest.raises(DataError, match=r"dataset.json:1: not valid JSON"):
        read_chitchat(path)
    with pytest.raises(FileNotFoundError, match="chitchat corpus file not found"):
        read_chitchat(tmp_path / "missing.json")


def test_chatterbot_reads_values_as_strings(tmp_path):
    (tmp_path / "x.yml").write_text(
        "categories:\n- misc\nconversations:\n- - Are you sure?\n  - yes\n- - Pi?\n  - 3.14\n"
    )
    ds = read_chatterbot(tmp_path)
    assert [d.utterances for d in ds] == [("Are you sure?", "yes"), ("Pi?", "3.14")]
    assert ds[0].domain == "misc"
    (tmp_path / "y.yml").write_text("conversations: [oops\n")
    with pytest.raises(DataError, match=r"y.yml:\d+: not valid YAML"):
        read_chatterbot(tmp_path)
