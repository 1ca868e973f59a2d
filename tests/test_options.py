"""Every option is declared once and checked once: the same bad value gives the same one line through the command
line and through ``calibrank.fit``, before any work; ``--out`` is checked before any work too, and a report leaves
no lock file beside it."""

from __future__ import annotations

import dataclasses
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

import calibrank
from calibrank import cli
from calibrank.assess import api
from calibrank.assess.errors import OptionError
from calibrank.assess.options import Options, Settings, cli_name, declared
from calibrank.assess.page import publish as publish_mod

#: one bad value per declared setting, as the command line would receive it (text) and Python (a value)
BAD = {
    "score": ("prob", "prob"),
    "relevant_at": ("0", 0),
    "precision": ("1.5", 1.5),
    "recall": ("-0.1", -0.1),
    "recall_over": ("all", "all"),
    "confidence": ("1", 1.0),
    "coverage": ("0", 0.0),
    "risk": ("high", "high"),
    "alpha": ("0", 0.0),
    "map": ("splines", "splines"),
    "level": ("2", 2.0),
    "seed": ("-1", -1),
    "n_resamples": ("1", 1),
}


def _arrays(n_queries: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.arange(n_queries), 6)
    rel = (rng.random(qids.size) < 0.3).astype(int)
    return 2 * rel + rng.normal(size=qids.size), rel, qids


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("opts")
    s, y, q = _arrays()
    (d / "run.trec").write_text("".join(f"q{a} Q0 d{i} 0 {b:.5f} r\n" for i, (a, b) in enumerate(zip(q, s))))
    (d / "qrels").write_text("".join(f"q{a} 0 d{i} {c}\n" for i, (a, c) in enumerate(zip(q, y))))
    return d


def test_every_setting_has_a_bad_value_here():
    assert set(BAD) == {f.name for f in dataclasses.fields(Settings)}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_the_same_line_through_the_command_and_through_fit(name, run_files, capsys, monkeypatch):
    text, value = BAD[name]
    monkeypatch.setattr(api, "fit_calibrator", lambda *a, **k: pytest.fail("fit ran before the options held"))
    with pytest.raises(OptionError) as python:
        calibrank.fit(*_arrays(), **{name: value})
    argv = [
        "assess",
        str(run_files / "run.trec"),
        str(run_files / "qrels"),
        cli_name(name),
        text,
        "--out",
        str(run_files / "out"),
    ]
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    # the same words, each naming the option as its caller spells it
    assert python.value.option == name
    assert err.strip() == f"calibrank assess: error: {cli_name(name)}: {python.value.text}"
    assert not (run_files / "out").exists()


def test_a_mistyped_keyword_is_refused_with_the_name_it_could_have_meant():
    with pytest.raises(OptionError, match=r"^precison: not an option of calibrank.fit \(did you mean precision\?\)"):
        calibrank.fit(*_arrays(), precison=0.8)
    with pytest.raises(OptionError, match="not an option of calibrank.evaluate"):
        calibrank.evaluate(*_arrays(), confidance=0.9)


def test_the_command_line_is_built_from_the_declarations(capsys):
    """Each declared option is an argument with the declaration's help and default; none is written twice."""
    with pytest.raises(SystemExit):
        cli.main(["assess", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for field in declared(Options):
        assert cli_name(field.name) in text
        assert " ".join(field.metadata["help"].split()) in text
        if field.default not in (None, ()):
            assert f"(default {field.default})" in text


def test_fit_and_evaluate_show_the_settings_in_their_signature():
    import inspect

    for func in (calibrank.fit, calibrank.evaluate):
        params = inspect.signature(func).parameters
        for f in dataclasses.fields(Settings):
            assert params[f.name].default == f.default and params[f.name].kind is inspect.Parameter.KEYWORD_ONLY


# ------------------------------------------------------------------------------ the report folder
@pytest.mark.parametrize(
    "out,expected",
    [
        ("/proc/calibrank-x", "is on a system pseudo-filesystem"),
        ("FILE/sub", "is a file, so"),
        ("FILE", "is a file; expected a folder"),
    ],
)
def test_out_is_checked_before_any_work(out, expected, run_files, tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("x")
    out = out.replace("FILE", str(tmp_path / "file"))
    monkeypatch.setattr("calibrank.assess.command.load", lambda **_: pytest.fail("inputs read before --out held"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["assess", str(run_files / "run.trec"), str(run_files / "qrels"), "--out", out])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--out: " in err and expected in err and err.count("\n") == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_refused_before_any_work(run_files, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    with pytest.raises(SystemExit):
        cli.main(["assess", str(run_files / "run.trec"), str(run_files / "qrels"), "--out", str(ro / "out")])
    assert "cannot be written" in capsys.readouterr().err


def test_a_file_given_twice_among_the_runs_is_refused(run_files, capsys):
    run = str(run_files / "run.trec")
    with pytest.raises(SystemExit):
        cli.main(["assess", run, run, str(run_files / "qrels"), "--out", str(run_files / "twice")])
    assert "is given twice" in capsys.readouterr().err
    with pytest.raises(OptionError, match="valid_run: .* is given twice"):
        Options(
            run=[run],
            qrels=str(run_files / "qrels"),
            valid_run=[run_files / "run.trec", run],
            valid_qrels=str(run_files / "qrels"),
        )


def test_a_missing_file_among_the_runs_is_one_line_naming_the_option(run_files):
    # os.stat(None) used to escape as a TypeError with no option named
    with pytest.raises(OptionError, match="valid_run: expected a path, got NoneType"):
        Options(
            run=[str(run_files / "run.trec")],
            qrels=str(run_files / "qrels"),
            valid_run=[None],
            valid_qrels=str(run_files / "qrels"),
        )


def test_a_report_leaves_no_lock_file_beside_it(run_files, tmp_path):
    out = tmp_path / "reports" / "mine"
    report = calibrank.evaluate(*_arrays(), n_resamples=20)
    report.save(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["mine"]
    assert Path(publish_mod.lock_path(out)).parent == Path(publish_mod.tempfile.gettempdir())


def test_a_second_writer_says_so_and_gives_up_after_a_bounded_wait(tmp_path, capsys):
    out = tmp_path / "busy"
    held, release = threading.Event(), threading.Event()

    def first(folder: Path) -> None:
        held.set()
        release.wait(10)
        (folder / "a").write_text("first")

    t = threading.Thread(target=publish_mod.publish, args=(out, first))
    t.start()
    held.wait(10)
    try:
        with pytest.raises(calibrank.AssessError, match=r"still being written by another calibrank after 1 s"):
            publish_mod.publish(out, lambda folder: (folder / "a").write_text("second"), timeout=1.0)
        assert "is being written by another calibrank; waiting up to 1 s" in capsys.readouterr().err
    finally:
        release.set()
        t.join(10)
    assert (out / "a").read_text() == "first"
