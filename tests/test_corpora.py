"""Corpora by name, as a profile asks for them: offline splits, published splits, and the errors."""

import shutil

import pytest

from calibrank.study.data import DataError
from calibrank.study.data.corpora import load_corpus
from calibrank.study.settings.schema import DataConfig, QueryCaps
from conftest import FIXTURES


def test_unknown_corpus_lists_the_known_ones():
    with pytest.raises(DataError, match="unknown corpus 'chitchatt'; known corpora: chitchat, chatterbot, msdialog"):
        load_corpus("chitchatt", DataConfig(), seed=0)


def test_offline_corpus_splits_by_dialogue_caps_examples_and_keeps_full_pools():
    data = DataConfig(max_dialogues=300, max_examples=QueryCaps(train=50, valid=10, test=10))
    cs = load_corpus("chatterbot", data, seed=3)
    ids = {s: {e.dialogue_id for e in v} for s, v in cs.examples.items()}
    assert ids["train"].isdisjoint(ids["test"]) and ids["valid"].isdisjoint(ids["test"])
    assert {s: len(v) for s, v in cs.examples.items()} == {"train": 50, "valid": 10, "test": 10}
    assert sum(cs.n_dialogues.values()) == 300
    for s, exs in cs.examples.items():
        assert len(cs.pools[s]) >= len(exs) and {e.response for e in exs} <= set(cs.pools[s])
    again = load_corpus("chatterbot", data, seed=3)
    assert again.examples == cs.examples
    assert load_corpus("chatterbot", data, seed=4).examples != cs.examples


def test_published_corpus_keeps_its_splits_and_caps_context(tmp_root):
    shutil.copytree(FIXTURES / "msdialog", tmp_root / "data" / "raw" / "msdialog")
    cs = load_corpus("msdialog", DataConfig(max_context_utterances=1), seed=0)
    assert all(len(e.context) == 1 for exs in cs.examples.values() for e in exs)
    assert all(e.eid.startswith(f"msdialog-{s}-L") for s, exs in cs.examples.items() for e in exs)


def test_missing_published_files_say_how_to_get_them(tmp_root):
    with pytest.raises(FileNotFoundError, match=r"make data DATASET=mantis"):
        load_corpus("mantis", DataConfig(), seed=0)


def test_split_leaks_and_query_set_problems_catch_what_they_name(tmp_root):
    from calibrank.study.data import Example, RankingQuery
    from calibrank.study.data.querysets import query_set_problems, split_leaks
    from calibrank.study.settings.config import load_config

    a, b = Example("e1", ("hi",), "yo", dialogue_id="d1"), Example("e2", ("hey",), "ok", dialogue_id="d2")
    assert split_leaks({"c": {"train": [a], "test": [b]}}) == []
    assert split_leaks({"c": {"train": [a], "test": [a, b]}}) == ["c: 1 dialogues in both train and test, e.g. 'd1'"]
    cfg = load_config("smoke")  # train_k 1, eval_k 9
    good = RankingQuery("q", ("hi",), ("x", "y"), (1, 0))
    dup = RankingQuery("q2", ("hi",), ("x", "x"), (1, 0))
    assert query_set_problems(cfg, {"c/train-bm25-k1": [good]}) == []
    assert query_set_problems(cfg, {"c/test-bm25-k9": [good]}) == [
        "c/test-bm25-k9: query 'q' has 2 candidates, 1 relevant"
    ]
    assert query_set_problems(cfg, {"c/train-bm25-k1": [dup]}) == [
        "c/train-bm25-k1: query 'q2' has duplicate candidates"
    ]


def test_an_empty_published_split_names_its_files_not_max_dialogues(tmp_root):
    raw = tmp_root / "data" / "raw" / "msdialog"
    shutil.copytree(FIXTURES / "msdialog", raw)
    (raw / "test.tsv").write_text("0\tonly\ta negative\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"split 'test' has no examples: its published files \(.*test.tsv\)") as info:
        load_corpus("msdialog", DataConfig(), seed=0)
    assert "max_dialogues" not in str(info.value)


def test_published_corpus_errors_never_suggest_max_dialogues(tmp_root):
    raw = tmp_root / "data" / "raw" / "mantis"
    shutil.copytree(FIXTURES / "mantis", raw)
    (raw / "valid.tsv").write_bytes(b"1\tcaf\xe9\tyes\n")
    with pytest.raises(DataError, match=r"valid.tsv:1: not UTF-8 text") as info:
        load_corpus("mantis", DataConfig(), seed=0)
    assert "max_dialogues" not in str(info.value)


def test_offline_corpus_files_that_are_not_utf8_name_file_line_and_column(tmp_path):
    from calibrank.study.data.chatterbot import read_chatterbot
    from calibrank.study.data.chitchat import read_chitchat

    (tmp_path / "c.json").write_bytes(b'{\n  "a": {"prompt": "caf\xe9"}\n}\n')
    with pytest.raises(DataError, match=r"c.json: not UTF-8 text at line 2, column 23 \(byte 24, 0xe9\)"):
        read_chitchat(tmp_path / "c.json")
    (tmp_path / "food.yml").write_bytes(b"categories:\n- food\nconversations:\n- - caf\xe9\n")
    with pytest.raises(DataError, match=r"food.yml: not UTF-8 text at line 4, column 8"):
        read_chatterbot(tmp_path)
