"""Nothing stale, nothing silently altered: caches keyed by the code that makes them, artefacts checked where read.

- A trained model's cache key covers the code its training reaches: editing the focal loss in a
  copy of the library changes the keys of the models trained with it (focal, gpf_bert) and no other.
- Every artefact read back is checked against the sha256 recorded when it was written: an altered
  cache is rebuilt (a model retrained, a negatives entry, a logits file or a PG posterior computed
  again, a training checkpoint not resumed from) with a log line naming the file; an altered input
  (a query set, a corpus file, a table the report reads) is an error naming it.
- A TSV cut off mid-row is an error naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibrank import atomic
from calibrank.study import codekey
from calibrank.study.data import DataError
from calibrank.study.data.schema import Example
from calibrank.study.model.rankers import make_ranker
from conftest import FIXTURES, REPO
from rankfix import learnable_queries, tiny_run, tiny_training

TESTS = Path(__file__).resolve().parent
TRAIN, VALID, TEST = (
    learnable_queries(48, 1, seed=0),
    learnable_queries(16, 3, seed=1),
    learnable_queries(12, 3, seed=2),
)
MODEL_RANKERS = ("bert", "mc_dropout", "ensemble", "temperature", "focal", "sngp", "gpf_bert", "pg_drr")

# Prints, as JSON, the model-cache folders of every ranker (no model is built or trained).
KEYS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    from calibrank.study.model.rankers import make_ranker
    from rankfix import learnable_queries, tiny_run

    train, valid = learnable_queries(8, 1, seed=0), learnable_queries(4, 3, seed=1)
    out = {{}}
    for name in {names!r}:
        ranker = make_ranker(name, tiny_run("models", seed=3))
        out[name] = [p.name for p in ranker.model_dirs(train, valid)]
    print(json.dumps(out))
""")


def _keys(lib: Path) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(lib), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", KEYS.format(tests=str(TESTS), names=MODEL_RANKERS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_editing_the_focal_loss_changes_the_keys_of_the_models_trained_with_it_and_no_other(tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(REPO / "lib", lib, ignore=shutil.ignore_patterns("__pycache__"))
    before = _keys(lib)
    losses = lib / "calibrank" / "study" / "model" / "losses.py"
    text = losses.read_text(encoding="utf-8")
    # A comment and a docstring are not code: the keys stay.
    losses.write_text(text.replace('"""Mean focal loss', '# a note\n    """The mean focal loss', 1), encoding="utf-8")
    assert _keys(lib) == before
    edited = "return (-((1 - pt) ** gamma) * log_pt).mean()"
    assert edited in text
    losses.write_text(text.replace(edited, "return (-((1 - pt) ** (gamma + 0.5)) * log_pt).mean()"), encoding="utf-8")
    after = _keys(lib)
    changed = {name for name in MODEL_RANKERS if after[name] != before[name]}
    assert changed == {"focal", "gpf_bert"}
    # The rankers that share bert's model still share it, before and after.
    assert before["mc_dropout"] == before["temperature"] == before["bert"] == before["ensemble"][:1]
    # The key does not depend on where the library lives: the copy gives the checkout's keys.
    here = {
        name: [
            p.name
            for p in make_ranker(name, tiny_run("models", seed=3)).model_dirs(
                learnable_queries(8, 1, seed=0), learnable_queries(4, 3, seed=1)
            )
        ]
        for name in ("bert", "sngp")
    }
    assert here == {name: before[name] for name in here}


NEGATIVE_KEYS = textwrap.dedent("""
    import json
    from calibrank.study.data.schema import Example
    from calibrank.study.data.negatives import queries_cache_path

    examples = [Example(f"e{{i}}", (f"context {{i}}",), f"response {{i}}", f"d{{i}}", "test") for i in range(4)]
    print(json.dumps({{s: queries_cache_path(examples, corpus="c", split="test", sampler=s, k=2, seed=0).name
                      for s in ("random", "bm25", "mixed")}}))
""")


def test_editing_the_bm25_sampler_changes_the_negatives_cache_keys_of_the_samplers_that_use_it(tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(REPO / "lib", lib, ignore=shutil.ignore_patterns("__pycache__"))

    def keys():
        env = {**os.environ, "PYTHONPATH": str(lib), "OMP_NUM_THREADS": "1"}
        proc = subprocess.run(
            [sys.executable, "-c", NEGATIVE_KEYS.format()], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    before = keys()
    negatives = lib / "calibrank" / "study" / "data" / "negatives.py"
    text = negatives.read_text(encoding="utf-8")
    edited = "if score > 0 and ok(int(doc)):"
    assert edited in text
    negatives.write_text(text.replace(edited, "if score >= 0 and ok(int(doc)):"), encoding="utf-8")
    after = keys()
    assert {s for s in before if after[s] != before[s]} == {"bm25", "mixed"}


def test_each_ranker_trains_with_the_loss_its_key_covers(monkeypatch):
    """``training_loss()`` (what the model key covers) is the loss ``_loss`` calls."""
    import torch

    import calibrank.study.model.rankers.base as base
    import calibrank.study.model.rankers.focal as focal_mod
    import calibrank.study.model.rankers.sngp as sngp_mod
    from calibrank.study.model import losses

    rankers = {name: make_ranker(name, tiny_run("models", seed=0)) for name in ("bert", "focal", "sngp", "gpf_bert")}
    expected = {name: ranker.training_loss() for name, ranker in rankers.items()}  # before the spies go in
    assert expected["bert"] is losses.binary_cross_entropy and expected["gpf_bert"] is losses.focal
    assert make_ranker("sngp", tiny_run("m"), loss="focal").training_loss() is losses.focal
    called = []

    def spy(fn):
        def wrapped(*args, **kw):
            called.append(fn)
            return fn(*args, **kw)

        return wrapped

    for module in (base, focal_mod, sngp_mod):
        for name in ("binary_cross_entropy", "focal"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, spy(getattr(losses, name)))

    class Stub(torch.nn.Module):
        training = False

        def forward(self, **batch):
            return torch.zeros(2)

        def train_logits(self, batch):
            return torch.zeros(2), None

    labels = torch.tensor([1.0, 0.0])
    for name, ranker in rankers.items():
        called.clear()
        ranker.loss(Stub().eval(), {}, labels)
        assert called == [expected[name]], name


def test_the_code_key_follows_what_a_root_reaches(tmp_path, monkeypatch):
    """On a package written here: a root's key changes with the code it reaches, not with the rest."""
    pkg = tmp_path / "keyfix"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    sources = {
        "low.py": "SCALE = 2\nOTHER = 3\n\ndef scaled(x):\n    return SCALE * x\n\ndef unused(x):\n    return x\n",
        "top.py": textwrap.dedent("""
            from . import low
            from .low import scaled

            class Base:
                def run(self, x):
                    return self.step(x)

                def step(self, x):
                    return scaled(x)

            class Child(Base):
                def step(self, x):
                    return low.OTHER + super().step(x)

                def report(self):
                    return "not on the path"
        """),
    }
    monkeypatch.syspath_prepend(str(tmp_path))

    def keys():
        for name, text in sources.items():
            (pkg / name).write_text(text)
        codekey.forget()
        for name in list(sys.modules):
            if name.startswith("keyfix"):
                del sys.modules[name]
        import keyfix.top as top

        return codekey.code_hash((top.Base, "run")), codekey.code_hash((top.Child, "run"))

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    base, child = keys()
    assert base != child  # Child.step (and low.OTHER) are on Child's path only
    sources["low.py"] = sources["low.py"].replace("return x\n", "return -x\n")  # unused: no key changes
    sources["top.py"] = sources["top.py"].replace('"not on the path"', '"still not on it"')
    assert keys() == (base, child)
    sources["low.py"] = sources["low.py"].replace("OTHER = 3", "OTHER = 4")  # reached by Child only
    same, other = keys()
    assert same == base and other != child
    sources["low.py"] = sources["low.py"].replace("SCALE = 2", "SCALE = 5")  # reached by both
    new_base, new_child = keys()
    assert new_base != base and new_child not in (other, new_base)


# ---------------------------------------------------------------- altered caches are rebuilt


def _fit(name: str, models_dir: Path, **kw):
    return make_ranker(name, tiny_run(models_dir, seed=3, epochs=1), **kw).fit(TRAIN, VALID)


def test_a_model_file_with_bytes_zeroed_is_retrained_not_used(tmp_path, caplog):
    first = _fit("bert", tmp_path)
    expected = first.predict(TEST).probs
    path = first.trained.workdir / "model.safetensors"
    good = path.read_bytes()
    data = bytearray(good)
    data[len(data) // 2 : len(data) // 2 + 4000] = bytes(4000)  # inside the tensors: the file still parses
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        again = _fit("bert", tmp_path)
    assert any(str(path) in r.getMessage() and "sha256" in r.getMessage() for r in caplog.records), caplog.text
    assert again.trained.workdir == first.trained.workdir
    assert path.read_bytes() == good  # retrained to the same weights, byte for byte
    again.reuse_logits = False
    np.testing.assert_array_equal(again.predict(TEST).probs, expected)


def test_a_truncated_or_altered_logits_cache_is_computed_again(tmp_path, caplog):
    bert = _fit("bert", tmp_path)
    expected = bert.predict(TEST).probs
    (path,) = sorted((bert.trained.workdir / "logits").glob("*.npz"))
    with np.load(path) as z:
        logits, seconds = z["logits"], z["seconds"]
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with caplog.at_level(logging.WARNING):
        np.testing.assert_array_equal(bert.predict(TEST).probs, expected)
    assert any(str(path) in r.getMessage() for r in caplog.records), caplog.text
    atomic.check_recorded(path, path.read_bytes())  # written again, with its record
    with np.load(path) as z:
        np.testing.assert_array_equal(z["logits"], logits)
    # A well-formed file with other numbers.
    with open(path, "wb") as fh:
        np.savez(fh, logits=logits + 1.0, seconds=seconds)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        np.testing.assert_array_equal(bert.predict(TEST).probs, expected)
    assert any(str(path) in r.getMessage() for r in caplog.records), caplog.text


def test_a_negatives_cache_entry_with_a_label_moved_is_rebuilt(tmp_root, caplog):
    from calibrank.study.data.negatives import cached_queries, queries_cache_path

    examples = [Example(f"e{i}", (f"context {i}",), f"response number {i}", f"d{i}", "test") for i in range(12)]
    kw = dict(corpus="fixture", split="test", sampler="random", k=3, seed=0)
    first = cached_queries(examples, **kw)
    dest = queries_cache_path(examples, **kw)
    table = pq.read_table(dest)
    labels = table.column("labels").to_pylist()
    labels[0] = labels[0][1:] + labels[0][:1]  # the relevant candidate is now another one
    pq.write_table(
        table.set_column(table.schema.get_field_index("labels"), "labels", pa.array(labels, type=pa.list_(pa.int8()))),
        dest,
    )
    with caplog.at_level(logging.WARNING):
        again = cached_queries(examples, **kw)
    assert again == first
    assert any(str(dest) in r.getMessage() for r in caplog.records), caplog.text


def test_a_pg_posterior_cache_with_bytes_changed_is_computed_again(tmp_path, caplog):
    from safetensors.torch import load_file, save_file

    kw = dict(inducing=24, gibbs_chains=4, samples=5)
    first = _fit("pg_drr", tmp_path, **kw)
    expected = first.predict(TEST)  # from the posterior as computed (read back from the file just written)
    (path,) = first.trained.workdir.glob("pg_posterior-*.safetensors")
    good = path.read_bytes()
    n = int.from_bytes(good[:8], "little")
    tensors = load_file(str(path))
    tensors["w"] = tensors["w"] * 3.0  # other Polya-Gamma draws: a well-formed file that predicts otherwise
    save_file(tensors, str(path), metadata=json.loads(good[8 : 8 + n])["__metadata__"])
    assert path.read_bytes() != good
    with caplog.at_level(logging.WARNING):
        again = _fit("pg_drr", tmp_path, **kw)
    assert any(str(path) in r.getMessage() and "sha256" in r.getMessage() for r in caplog.records), caplog.text
    assert again.trained.workdir == first.trained.workdir
    atomic.check_recorded(path, path.read_bytes())  # written again, with its record
    pred = again.predict(TEST)
    np.testing.assert_array_equal(pred.probs, expected.probs)
    np.testing.assert_array_equal(pred.samples, expected.samples)


def test_a_checkpoint_with_bytes_zeroed_is_not_resumed_from(tmp_path, caplog):
    import torch
    from safetensors.torch import load_file

    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.losses import binary_cross_entropy
    from calibrank.study.model.training import encode_pairs, train_model

    def loss(model, batch, labels):
        return binary_cross_entropy(model(**batch), labels)

    def fresh():
        return CrossEncoder(load_backbone("tiny-random", seed=0), seed=0)

    class Interrupt(Exception):
        pass

    def stop_at_5(step):
        if step == 5:
            raise Interrupt

    pairs = encode_pairs(load_backbone("tiny-random").tokenizer, TRAIN, max_length=40, max_response_length=16)
    settings = tiny_training(epochs=1, checkpoint_every=4)  # 96 pairs in batches of 16: 6 steps
    train_model(fresh(), loss, pairs, settings, tmp_path / "straight", seed=5)
    with pytest.raises(Interrupt):
        train_model(fresh(), loss, pairs, settings, tmp_path / "resumed", seed=5, on_step=stop_at_5)
    path = tmp_path / "resumed" / "checkpoint.safetensors"
    atomic.check_recorded(path, path.read_bytes())  # written with its record
    good = path.read_bytes()
    data = bytearray(good)
    start = len(data) // 2  # inside the tensors: the file still parses; skip moments that are zero already
    start += next(i for i, byte in enumerate(data[start:]) if byte)
    data[start : start + 4000] = bytes(4000)
    path.write_bytes(bytes(data))
    assert path.read_bytes() != good
    with caplog.at_level(logging.WARNING):
        result = train_model(fresh(), loss, pairs, settings, tmp_path / "resumed", seed=5)
    assert any(str(path) in r.getMessage() and "sha256" in r.getMessage() for r in caplog.records), caplog.text
    assert result.resumed_from == 0 and result.steps == 6  # trained from scratch
    a = load_file(str(tmp_path / "straight" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not path.exists() and not atomic.digest_path(path).exists()  # cleaned up when finished


# ---------------------------------------------------------------- altered inputs are errors


def test_a_query_set_altered_after_it_was_written_is_an_error_naming_it(tmp_root):
    from calibrank.study.data.io import write_queries
    from calibrank.study.data.querysets import QuerySetSpec, load_query_set, query_set_path
    from calibrank.study.settings.config import load_config

    cfg = load_config("smoke")
    spec = QuerySetSpec("chitchat", "test", cfg.negatives.eval[0], 3)
    path = write_queries(query_set_path(cfg, spec), TEST)
    assert load_query_set(cfg, "chitchat", "test", spec.sampler, 3) == TEST
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)  # a query dropped: still a readable query set
    with pytest.raises(
        DataError, match=rf"{path}: sha256 [0-9a-f]{{64}} differs from .*make nb-02_negatives PROFILE=smoke"
    ):
        load_query_set(cfg, "chitchat", "test", spec.sampler, 3)
    atomic.digest_path(path).unlink()
    with pytest.raises(DataError, match=rf"{path}: no sha256 was recorded"):
        load_query_set(cfg, "chitchat", "test", spec.sampler, 3)


def test_an_exported_table_altered_after_it_was_written_is_an_error_naming_it(tmp_root):
    import pandas as pd

    from calibrank.study.analysis.exports import TableFileError, export_tables, load_exported_tables

    table = pd.DataFrame({"claim": ["a, b", "c"], "ours": [0.1, 0.2]})
    path = export_tables("smoke", {"claims_x": table}, notebook="04_calibration")["claims_x"]
    pd.testing.assert_frame_equal(load_exported_tables("smoke")["claims_x"], table)
    path.write_bytes(path.read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # the last row dropped: still a readable table
    with pytest.raises(TableFileError, match=rf"{path}: sha256 [0-9a-f]{{64}} differs from") as err:
        load_exported_tables("smoke")
    assert err.value.path == path
    atomic.digest_path(path).unlink()
    with pytest.raises(TableFileError, match=rf"{path}: no sha256 was recorded"):
        load_exported_tables("smoke")


def test_a_corpus_file_that_disagrees_with_sha256sums_is_an_error_naming_it(tmp_root):
    from calibrank.study.data.corpora import load_corpus
    from calibrank.study.settings.schema import DataConfig

    raw = tmp_root / "data" / "raw" / "mantis"
    shutil.copytree(FIXTURES / "mantis", raw)
    names = sorted(p.name for p in raw.iterdir())
    (raw / "SHA256SUMS").write_text(
        "".join(f"{hashlib.sha256((raw / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    )
    load_corpus("mantis", DataConfig(), seed=0)  # as recorded: read
    victim = raw / "valid.tsv"
    victim.write_text(victim.read_text(encoding="utf-8").replace("abroad", "at home"), encoding="utf-8")
    with pytest.raises(
        DataError,
        match=rf"{victim}: sha256 [0-9a-f]{{64}} differs from [0-9a-f]{{64}} recorded in "
        rf"{raw / 'SHA256SUMS'}",
    ):
        load_corpus("mantis", DataConfig(), seed=0)


def test_a_tsv_cut_off_mid_row_is_an_error_naming_file_and_line(tmp_path):
    from calibrank.study.data.tsv import read_tsv

    text = (FIXTURES / "msdialog" / "train.tsv").read_text(encoding="utf-8")
    lines = text.count("\n")
    path = tmp_path / "train.tsv"
    path.write_text(text[:-6], encoding="utf-8")  # the last response loses its end
    with pytest.raises(DataError, match=rf"{path}:{lines}: .*ends without a newline"):
        read_tsv(path, "msdialog", "train")
    cut = text.rsplit("\t", 2)[0] + "\n"  # the last row (a negative) cut after its first utterance
    path.write_text(cut, encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}:{lines}: expected 5 tab-separated columns like line {lines - 1}"):
        read_tsv(path, "msdialog", "train")


def test_a_constant_only_the_focal_loss_reads_enters_the_keys_of_the_models_trained_with_it_and_no_other(tmp_path):
    """``ADAPTIVE_HIGH`` is read by :func:`calibrank.study.model.losses.focal` alone: changing it retrains the models
    that train with the focal loss, not ``bert``'s (a module constant is not part of every ranker's key)."""
    lib = tmp_path / "lib"
    shutil.copytree(REPO / "lib", lib, ignore=shutil.ignore_patterns("__pycache__"))
    before = _keys(lib)
    losses = lib / "calibrank" / "study" / "model" / "losses.py"
    text = losses.read_text(encoding="utf-8")
    assert "\nADAPTIVE_HIGH = 3.0\n" in text
    losses.write_text(text.replace("\nADAPTIVE_HIGH = 3.0\n", "\nADAPTIVE_HIGH = 2.0\n"), encoding="utf-8")
    after = _keys(lib)
    assert after["bert"] == before["bert"]
    assert {name for name in MODEL_RANKERS if after[name] != before[name]} == {"focal", "gpf_bert"}
