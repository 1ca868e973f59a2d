"""Readers of the published corpora (MSDialog, MANtIS TSV; UDC_DSTC8 JSON) and their layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from calibrank.study import paths
from calibrank.study.data.dstc8 import read_dstc8, strip_speakers
from calibrank.study.data.published import PUBLISHED, expected_files, load_published, missing_hint
from calibrank.study.data.schema import DataError
from calibrank.study.data.tsv import read_tsv

FIXTURES = Path(__file__).parent / "fixtures"


# ---------------------------------------------------------------- TSV (MSDialog, MANtIS)


def test_msdialog_train_counts_and_records():
    stats: dict[str, int] = {}
    exs = read_tsv(FIXTURES / "msdialog" / "train.tsv", "msdialog", "train", stats=stats)
    assert stats == {"rows": 7, "positives": 3, "negatives": 4, "blank_lines": 0}
    assert [e.eid for e in exs] == ["msdialog-train-L1", "msdialog-train-L4", "msdialog-train-L6"]
    first, last = exs[0], exs[-1]
    assert first.context == ("How do I change the line spacing in Word 2007?",)
    assert first.response.startswith("Open the Paragraph dialog")
    assert last.context == (
        "Outlook 2016 keeps asking for my password.",
        "Is this an Exchange account?",
        "Yes, it is my work account.",
    )
    assert last.response == "Remove the saved Outlook entries in Credential Manager and restart Outlook."


def test_dialogue_chain_shares_id_and_new_dialogue_gets_new_id():
    exs = read_tsv(FIXTURES / "msdialog" / "train.tsv", "msdialog", "train")
    assert exs[1].context[: len(exs[0].context) + 1] == exs[0].context + (exs[0].response,)
    assert exs[0].dialogue_id == exs[1].dialogue_id == "msdialog-train-L1"
    assert exs[2].dialogue_id == "msdialog-train-L6"
    mantis = read_tsv(FIXTURES / "mantis" / "train.tsv", "mantis", "train")
    assert [e.dialogue_id for e in mantis] == ["mantis-train-L1", "mantis-train-L1", "mantis-train-L6"]


def test_chain_needs_the_previous_response_not_just_the_context(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("1\tq\ta\n1\tq\tsomething else\tu\tb\n1\tq\ta\n", encoding="utf-8")
    exs = read_tsv(path, "s", "t")
    assert [e.dialogue_id for e in exs] == ["s-t-L1", "s-t-L2", "s-t-L3"]


def test_blank_final_line_and_negative_first_rows(tmp_path):
    valid = read_tsv(FIXTURES / "msdialog" / "valid.tsv", "msdialog", "valid", stats=(stats := {}))
    assert [e.eid for e in valid] == ["msdialog-valid-L1", "msdialog-valid-L3"]
    assert stats["blank_lines"] == 1
    test = read_tsv(FIXTURES / "msdialog" / "test.tsv", "msdialog", "test")
    assert [e.eid for e in test] == ["msdialog-test-L2"]


def test_crlf_is_stripped_and_blank_utterances_dropped(tmp_path):
    path = tmp_path / "crlf.tsv"
    path.write_bytes(b"1\thello\t \tthere\tgeneral kenobi\r\n0\thello\t \tthere\tno\r\n\r\n")
    (ex,) = read_tsv(path, "s", "valid")
    assert ex.context == ("hello", "there")
    assert ex.response == "general kenobi"
    assert ex.eid == "s-valid-L1"


def test_mantis_splits():
    got = load_published("mantis", FIXTURES / "mantis")
    assert {k: len(v) for k, v in got.items()} == {"train": 3, "valid": 1, "test": 2}
    assert got["test"][0].context == (
        "How do I list installed packages on Ubuntu?",
        "Which package manager?",
        "apt, on 22.04.",
    )
    assert got["test"][-1].response == "A sharp chisel and a combination square."


def test_msdialog_splits():
    got = load_published("msdialog", FIXTURES / "msdialog")
    assert {k: len(v) for k, v in got.items()} == {"train": 3, "valid": 2, "test": 1}
    assert got["valid"][0].eid == "msdialog-valid-L1"


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("1\tq\ta\n1\tonly-two\n", 2, "at least 3 tab-separated columns"),
        ("1\tq\ta\n\n0\tq\ta\n2\tq\ta\n", 4, "label '0' or '1'"),
        ("1\tq\ta\n1 \tq\ta\n", 2, "label '0' or '1'"),
        ("1\tq\ta\n1\t \t\tb\n", 2, "empty context"),
        ("1\tq\ta\n1\tq\t  \n", 2, "empty candidate"),
        ("0\tq\tx\n0\tq\n", 2, "at least 3 tab-separated columns"),  # label-0 rows are validated too
    ],
)
def test_tsv_errors_name_file_line_and_expectation(tmp_path, text, line, expected):
    path = tmp_path / "bad.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_tsv(path, "msdialog", "train")
    msg = str(info.value)
    assert f"{path}:{line}:" in msg
    assert expected in msg


def test_blank_candidate_on_a_negative_row_is_not_an_error(tmp_path):
    path = tmp_path / "neg.tsv"
    path.write_text("1\tq\ta\n0\tq\t \n", encoding="utf-8")
    assert len(read_tsv(path, "s", "t")) == 1


# ---------------------------------------------------------------- DSTC8 (UDC)


def test_strip_speakers():
    assert strip_speakers("participant_1: hi") == "hi"
    assert strip_speakers("participant_3 try this") == "try this"
    assert strip_speakers("participant_12 , ok then") == "ok then"
    assert strip_speakers("ask participant_4 about it") == "ask about it"
    assert strip_speakers("participant_10") == ""
    assert strip_speakers("myparticipant_1 stays") == "myparticipant_1 stays"


def test_dstc8_train_records_and_counts():
    stats: dict[str, int] = {}
    exs = read_dstc8(FIXTURES / "udc_dstc8" / "task-1.ubuntu.train.json", split="train", stats=stats)
    assert stats == {"examples": 3, "kept": 2, "no_correct_answer": 1, "empty_after_stripping": 0}
    assert [e.eid for e in exs] == ["udc_dstc8-train-1000", "udc_dstc8-train-1002"]
    first, last = exs
    assert first.context == ("my wifi stopped working after the upgrade", "which card do you have ?", "an intel 7260")
    assert first.response == "try sudo modprobe -r iwlwifi && sudo modprobe iwlwifi"
    assert first.dialogue_id == first.eid
    assert last.context == ("is there a gui for apt ?",)
    assert last.response == "synaptic , ask about it"
    assert not any("participant_" in u for e in exs for u in (*e.context, e.response))


def test_dstc8_without_split_and_custom_source():
    exs = read_dstc8(FIXTURES / "udc_dstc8" / "task-1.ubuntu.dev.json", source="ubuntu")
    assert [e.eid for e in exs] == ["ubuntu-2000", "ubuntu-2001", "ubuntu-2003"]


def test_udc_valid_and_test_are_dev_halves():
    got = load_published("udc_dstc8", FIXTURES / "udc_dstc8")
    assert len(got["train"]) == 2
    # dev: 4 examples, one without a correct answer -> 3 kept; valid = first 3 // 2, test = the rest
    assert [e.eid for e in got["valid"]] == ["udc_dstc8-dev-2000"]
    assert [e.eid for e in got["test"]] == ["udc_dstc8-dev-2001", "udc_dstc8-dev-2003"]
    assert got["test"][-1].context == ("how do i see my ubuntu version ?", "lsb_release -a", "thanks")
    assert got["test"][-1].response == "np"


def test_dstc8_utterance_emptied_by_stripping(tmp_path):
    data = [
        {
            "example-id": "a",
            "messages-so-far": [
                {"speaker": "participant_0", "utterance": "hi"},
                {"speaker": "participant_1", "utterance": "participant_0:"},
            ],
            "options-for-correct-answers": [{"candidate-id": "x", "utterance": "yes"}],
            "options-for-next": [],
        },
        {
            "example-id": "b",
            "messages-so-far": [{"speaker": "participant_0", "utterance": "hi"}],
            "options-for-correct-answers": [{"candidate-id": "y", "utterance": "participant_0"}],
            "options-for-next": [],
        },
    ]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    stats: dict[str, int] = {}
    (ex,) = read_dstc8(path, stats=stats)
    assert ex.context == ("hi",)
    assert stats["empty_after_stripping"] == 1


def test_dstc8_streams_across_chunks(tmp_path, monkeypatch):
    import calibrank.study.data.dstc8 as dstc8

    monkeypatch.setattr(dstc8, "_CHUNK", 5)
    exs = read_dstc8(FIXTURES / "udc_dstc8" / "task-1.ubuntu.train.json", split="train")
    assert [e.eid for e in exs] == ["udc_dstc8-train-1000", "udc_dstc8-train-1002"]


def _example(eid: object, **extra: object) -> dict:
    base = {
        "example-id": eid,
        "messages-so-far": [{"speaker": "participant_0", "utterance": "hello"}],
        "options-for-correct-answers": [{"candidate-id": "c", "utterance": "hi"}],
        "options-for-next": [],
    }
    base.update(extra)
    return base


def test_dstc8_missing_messages_names_file_index_and_id(tmp_path):
    bad = _example(77)
    del bad["messages-so-far"]
    path = tmp_path / "d.json"
    path.write_text(json.dumps([_example(76), bad]), encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_dstc8(path)
    msg = str(info.value)
    assert str(path) in msg and "example 1" in msg and "77" in msg and "messages-so-far" in msg


def test_dstc8_missing_correct_answers_key_is_an_error(tmp_path):
    bad = _example("e-9")
    del bad["options-for-correct-answers"]
    path = tmp_path / "d.json"
    path.write_text(json.dumps([bad]), encoding="utf-8")
    with pytest.raises(DataError, match=r"example 0 \(example-id 'e-9'\).*options-for-correct-answers"):
        read_dstc8(path)


def test_dstc8_non_list_top_level(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"examples": [_example(1)]}), encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_dstc8(path)
    assert str(path) in str(info.value) and "JSON list" in str(info.value)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[\n  {"example-id": 1,\n   "messages-so-far": [}\n]\n', 3),
        ('[\n  {"example-id": 1, "messages-so-far": [], "options-for-correct-answers": []}\n  {"example-id": 2}\n]', 3),
        ('[\n  {"example-id": 1, "messages-so-far": [], "options-for-correct-answers": []},\n', 3),
        ("", 1),
    ],
)
def test_dstc8_malformed_json_gives_line(tmp_path, text, line):
    path = tmp_path / "d.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_dstc8(path)
    assert f"{path}:{line}: not valid JSON" in str(info.value)


def test_dstc8_empty_list(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(" [ ] \n", encoding="utf-8")
    assert read_dstc8(path) == []


# ---------------------------------------------------------------- layout and hints


def test_expected_files_layout(tmp_path):
    assert expected_files("msdialog", tmp_path) == {s: tmp_path / f"{s}.tsv" for s in ("train", "valid", "test")}
    assert expected_files("udc_dstc8", tmp_path) == {
        "train": tmp_path / "task-1.ubuntu.train.json",
        "dev": tmp_path / "task-1.ubuntu.dev.json",
    }


def test_default_root_is_raw_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    assert expected_files("mantis")["train"] == paths.raw_dir("mantis") / "train.tsv"
    shutil.copytree(FIXTURES / "mantis", paths.raw_dir("mantis"))
    assert len(load_published("mantis")["train"]) == 3


def test_unknown_name_lists_known_names():
    with pytest.raises(ValueError) as info:
        load_published("ubuntu_v1")
    for name in PUBLISHED:
        assert name in str(info.value)
    with pytest.raises(ValueError):
        expected_files("nope")


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("msdialog", "ciir.cs.umass.edu"),
        ("mantis", "guzpenha.github.io/MANtIS"),
        ("udc_dstc8", "github.com/dstc8-track2/NOESIS-II"),
    ],
)
def test_missing_files_hint(tmp_path, name, home):
    shutil.copytree(FIXTURES / name, tmp_path / name)
    victim = sorted((tmp_path / name).iterdir())[0]
    victim.unlink()
    with pytest.raises(FileNotFoundError) as info:
        load_published(name, tmp_path / name)
    msg = str(info.value)
    assert str(victim) in msg
    assert f"make data DATASET={name}" in msg and "internet access" in msg and "by hand" in msg
    assert home in msg


def test_missing_hint_without_files_points_at_the_raw_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    msg = missing_hint("mantis", [])
    assert f"copy {paths.raw_dir('mantis')} here" in msg and "make data DATASET=mantis" in msg


# ---------------------------------------------------------------- bytes that are not UTF-8, example ids


def test_tsv_bytes_that_are_not_utf8_name_file_line_and_column(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("1\thello\tthere\n0\thello\tno\n1\tcaf\u00e9\tyes\n".encode("latin-1"))
    with pytest.raises(DataError, match=rf"{path}:3: not UTF-8 text at column 6 \(byte 0xe9\)"):
        read_tsv(path, "s", "train")


def test_dstc8_bytes_that_are_not_utf8_name_file_and_line(tmp_path, monkeypatch):
    import calibrank.study.data.dstc8 as dstc8

    monkeypatch.setattr(dstc8, "_CHUNK", 7)  # the bad byte sits in a later chunk
    good = json.dumps(_example(1))
    path = tmp_path / "d.json"
    path.write_bytes(b"[\n" + good.encode() + b",\n" + good.replace("hello", "caf\u00e9").encode("latin-1") + b"\n]\n")
    with pytest.raises(DataError, match=rf"{path}: not UTF-8 text at line 3, column \d+ \(byte \d+, 0xe9\)"):
        read_dstc8(path)


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([1, None], r":3: example 1: no 'example-id'"),
        ([1, 2, 1], r":4: example 2: duplicate 'example-id' 1, first seen at line 2, example 0"),
        ([7, "7"], r":3: example 1: 'example-id' '7' is str but the first example's, 7 \(line 2, example 0\), is int"),
        (["a", 1.5], r":3: example 1: 'example-id' is 1.5 \(float\); expected a string or an integer"),
    ],
)
def test_dstc8_example_ids_are_checked_with_file_and_position(tmp_path, ids, message):
    examples = []
    for eid in ids:
        ex = _example(eid, **{"options-for-correct-answers": []})  # dropped examples are checked too
        if eid is None:
            del ex["example-id"]
        examples.append(ex)
    path = tmp_path / "d.json"
    path.write_text("[\n" + ",\n".join(json.dumps(e) for e in examples) + "\n]\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}{message}"):
        read_dstc8(path)
