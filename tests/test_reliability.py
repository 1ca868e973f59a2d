"""Faults the study survives: two processes after one result, processes that die mid-write, leftovers.

- Two trainers of one model at once: the second waits for the first (naming it) and loads its
  model; both end with the weights of a single uninterrupted run, byte for byte.
- A lock whose holder was killed is taken over; a held lock refuses with the holder's pid.
- Two builders of one negatives cache entry: the second reads the first one's file.
- Temporary files of dead writers are swept; a live writer's file never is.
- A broken sidecar, a truncated npz or model file, an unreadable Parquet file: the error names the file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from calibrank import atomic
from calibrank.study import locks, paths
from calibrank.study.data.io import write_queries
from calibrank.study.data.negatives import cached_queries, queries_cache_path
from calibrank.study.data.schema import Example, RankingQuery
from calibrank.study.model.rankers import make_ranker
from rankfix import learnable_queries, tiny_run

TESTS = Path(__file__).resolve().parent
SETTINGS = dict(epochs=2, checkpoint_every=4)  # 10 steps per epoch: checkpoints and a best.safetensors mid-run

# One trainer: fits `bert` on the fixture into MODELS, saves the weights it ends with to OUT.
# SLOW signals its first step (OUT.started) and then waits for OUT.go before it goes on, so
# that a second trainer asks for the model while this one is mid-run.
TRAINER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from safetensors.torch import save_file
    import calibrank.study.model.rankers.base as base
    from calibrank.study.model.rankers import make_ranker
    from rankfix import learnable_queries, tiny_run

    models, out, slow = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "slow"
    real = base.train_model

    def train_model(*args, **kw):
        def on_step(step):
            if step == 1:
                (out.parent / (out.name + ".started")).write_text(str(os.getpid()))
                t0 = time.monotonic()
                while not (out.parent / (out.name + ".go")).exists() and time.monotonic() - t0 < 120:
                    time.sleep(0.05)
        return real(*args, **kw, on_step=on_step if slow else None)

    base.train_model = train_model
    ranker = make_ranker("bert", tiny_run(models, **{settings!r}))
    ranker.fit(learnable_queries(80, 1, seed=0), learnable_queries(20, 3, seed=1))
    state = {{k: v.contiguous() for k, v in ranker.trained.model.state_dict().items()}}
    save_file(state, str(out))
    print("workdir", ranker.trained.workdir)
""").format(tests=str(TESTS), settings=SETTINGS)


def _start_trainer(models: Path, out: Path, slow: bool) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-c", TRAINER, str(models), str(out), "slow" if slow else "fast"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"trainer exited early:\n{proc.stdout.read()}\n{proc.stderr.read()[-4000:]}")
        assert time.monotonic() - t0 < timeout, f"{path} did not appear"
        time.sleep(0.05)


def _same_tensors(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and bool((a[k] == b[k]).all()) for k in a
    )


def test_two_trainers_of_one_model_end_with_the_weights_of_one_run(tmp_path):
    # The reference: one uninterrupted run, alone, in this process (one thread, as the trainers).
    solo = make_ranker("bert", tiny_run(tmp_path / "solo", **SETTINGS))
    solo.fit(learnable_queries(80, 1, seed=0), learnable_queries(20, 3, seed=1))
    assert solo.trained.result.best_step < solo.trained.result.steps  # early selection picked a mid-run step

    shared = tmp_path / "shared"
    first = _start_trainer(shared, tmp_path / "first.safetensors", slow=True)
    _wait_for(tmp_path / "first.safetensors.started", first)
    second = _start_trainer(shared, tmp_path / "second.safetensors", slow=False)
    err2 = ""
    while "waiting for" not in err2:  # the second blocks on the first one's lock, and says so
        line = second.stderr.readline()
        assert line, f"the second trainer ended without waiting:\n{err2[-4000:]}\n{second.stdout.read()}"
        err2 += line
    assert f"waiting for process {first.pid} " in err2  # naming the first
    (tmp_path / "first.safetensors.go").touch()
    out1, err1 = first.communicate(timeout=300)
    out2, rest = second.communicate(timeout=300)
    err2 += rest
    assert first.returncode == 0, err1[-4000:]
    assert second.returncode == 0, err2[-4000:]

    workdir = Path(out1.split("workdir", 1)[1].strip())
    assert out2.split("workdir", 1)[1].strip() == str(workdir)
    reference = solo.trained.workdir / "model.safetensors"
    assert (workdir / "model.safetensors").read_bytes() == reference.read_bytes()
    weights = load_file(str(reference))
    assert _same_tensors(load_file(str(tmp_path / "first.safetensors")), weights)
    assert _same_tensors(load_file(str(tmp_path / "second.safetensors")), weights)
    leftovers = sorted(p.name for p in workdir.parent.iterdir() if p.name.startswith("."))
    assert leftovers == [
        locks.lock_path(workdir).name
    ]  # the lock file stays, free; no temporary file, no holder record
    assert sorted(p.name for p in workdir.iterdir()) == ["model.safetensors", "train.json"]


# Holds the lock of argv[1] for argv[2] seconds; then moves the file argv[3] (if given) into place.
HOLDER = textwrap.dedent("""
    import os, sys, time
    from calibrank import atomic
    from calibrank.study import locks, paths
    with locks.exclusive(sys.argv[1], what="test"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
        if len(sys.argv) > 3:  # the result, then the sha256 recorded for it, as a writer puts them in place
            os.replace(sys.argv[3], sys.argv[1])
            atomic.record_digest(sys.argv[1], atomic.sha256_file(sys.argv[1]))
""")


# Tries the lock of argv[1] once and prints why it could not take it.
TRY_LOCK = textwrap.dedent("""
    import sys
    from calibrank import atomic
    from calibrank.study import locks, paths
    try:
        with locks.exclusive(sys.argv[1], wait=False):
            print("taken")
    except locks.LockHeld as exc:
        print(exc)
""")


def _hold(dest: Path, seconds: float, result: Path | None = None) -> subprocess.Popen:
    args = [str(dest), str(seconds)] + ([str(result)] if result else [])
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_held_lock_names_its_holder_and_a_dead_holders_lock_is_taken_over(tmp_path):
    dest = tmp_path / "result.parquet"
    holder = _hold(dest, 60)
    try:
        with pytest.raises(locks.LockHeld, match=rf"result.parquet.lock is held by process {holder.pid} on "):
            with locks.exclusive(dest, wait=False):
                pass
        with pytest.raises(locks.LockHeld, match=f"process {holder.pid}"):
            with locks.exclusive(dest, wait=0.3):
                pass
        assert locks.sweep_temp(tmp_path) == []  # a held lock is not swept
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert locks.lock_path(dest).exists()  # the killed holder left its lock file and its record ...
    with locks.exclusive(dest, wait=False) as lock:  # ... but the kernel released the lock: taken over at once
        assert lock == locks.lock_path(dest).resolve()
        other = subprocess.run([sys.executable, "-c", TRY_LOCK, str(dest)], capture_output=True, text=True, timeout=60)
        assert f"is held by process {os.getpid()} on " in other.stdout, other.stderr  # the record names this process
        with pytest.raises(RuntimeError, match="already holds"):
            with locks.exclusive(dest):
                pass
    assert locks.lock_path(dest).exists()  # the lock file stays after release (removing it would break the lock) ...
    assert sorted(p.name for p in tmp_path.iterdir()) == [locks.lock_path(dest).name]  # ... its holder's record goes
    with locks.exclusive(dest, wait=False):  # and it is free
        pass


def test_a_dead_holders_record_names_no_process(tmp_path):
    """The record a killed holder leaves names it no more once it is dead: a waiter then says "another process"."""
    dest = tmp_path / "result.parquet"
    holder = _hold(dest, 60)
    record = locks._holder_path(locks.lock_path(dest).resolve())
    assert locks._holder(locks.lock_path(dest).resolve()).startswith(f"process {holder.pid} on ")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert record.read_text().split()[0] == str(holder.pid)  # left behind ...
    assert locks._holder(locks.lock_path(dest).resolve()) == "another process"  # ... and read as no one's


def test_a_second_builder_of_a_negatives_entry_reads_the_first_ones_file(tmp_root):
    examples = [Example(f"e{i}", (f"context {i}",), f"response number {i}", f"d{i}", "test") for i in range(12)]
    kw = dict(corpus="fixture", split="test", sampler="random", k=3, seed=0)
    dest = queries_cache_path(examples, **kw)
    # What the first builder "builds": recognisable candidates, in place when it releases the lock.
    marked = [RankingQuery(e.eid, e.context, (e.response, "from the first builder"), (1, 0)) for e in examples]
    holder = _hold(dest, 1.5, write_queries(dest.with_name("built-by-the-first.parquet"), marked))
    t0 = time.monotonic()
    got = cached_queries(examples, **kw)
    assert time.monotonic() - t0 > 0.5  # it waited for the holder ...
    assert [q.candidates for q in got] == [q.candidates for q in marked]  # ... and read its entry, not a rebuild
    holder.wait(timeout=30)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_only_leftovers_of_dead_writers(tmp_path):
    host = atomic.owner_tag().split("@")[1]
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = _dead_pid()
    try:
        files = {
            "dead": f".tmp-a.parquet.pid{dead}@{host}.x1",
            "live": f".tmp-b.parquet.pid{live.pid}@{host}.x2",
            "mine": f".tmp-c.parquet.{atomic.owner_tag()}.x3",
            "other_host": f".tmp-d.parquet.pid{dead}@elsewhere-9.x4",
            "old_untagged": ".tmp-e.parquet.abc",
            "new_untagged": ".tmp-f.ipynb",
            "notebook_dead": f".tmp-02_negatives.pid{dead}@{host}.ipynb",
            "result": "a.parquet",
        }
        for name in files.values():
            (tmp_path / name).write_text("x")
        started = time.time()
        os.utime(tmp_path / files["old_untagged"], (started - 100, started - 100))
        os.utime(tmp_path / files["new_untagged"], (started + 100, started + 100))
        (tmp_path / ".free.lock").write_text("")  # a lock file nobody holds stays: removing one can break the lock
        removed = {p.name for p in locks.sweep_temp(tmp_path, started)}
        assert removed == {files["dead"], files["old_untagged"], files["notebook_dead"]}
        assert {p.name for p in tmp_path.iterdir()} == set(files.values()) - removed | {".free.lock"}
    finally:
        live.kill()
        live.wait()


def test_atomic_writes_name_their_writer_and_leave_nothing_on_error(tmp_path):
    dest = tmp_path / "out.json"
    with atomic.atomic_path(dest) as tmp:
        assert atomic.temp_owner(tmp.name) == (os.getpid(), atomic.owner_tag().split("@")[1])
        tmp.write_text("{}")
    with pytest.raises(ZeroDivisionError):
        with atomic.atomic_path(dest) as tmp:
            tmp.write_text("half")
            raise ZeroDivisionError
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"] and dest.read_text() == "{}"


# ---------------------------------------------------------------- corrupted files name themselves


def _predictions():
    import numpy as np

    from calibrank.predictions import Predictions

    labels = np.array([[1, 0, 0], [0, 1, 0]], dtype=np.int8)
    probs = np.full(labels.shape, 0.4)
    return Predictions(qids=np.array(["a", "b"]), labels=labels, probs=probs, samples=probs[None], meta={"ranker": "x"})


def test_a_broken_predictions_sidecar_or_truncated_npz_names_the_file(tmp_path):
    from calibrank.predictions import Predictions, PredictionsError

    path = _predictions().save(tmp_path / "p.npz")
    side = path.with_suffix(".json")
    good = side.read_text()
    side.write_text(good[: len(good) // 2])
    with pytest.raises(PredictionsError, match=rf"{side}: not valid JSON \(.*\): line \d+ column \d+"):
        Predictions.load(path)
    side.write_bytes(b'{"ranker": "caf\xe9"}')
    with pytest.raises(PredictionsError, match=rf"{side}: not UTF-8 text at line 1, column 16 \(byte 15, 0xe9\)"):
        Predictions.load(path)
    side.write_text(good.replace('"npz_sha256"', '"old_sha256"'))  # a sidecar that does not pin the arrays
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(PredictionsError, match=rf"{path}: not a readable .npz file \(BadZipFile"):
        Predictions.load(path)


def test_read_json_names_file_and_line(tmp_path):
    import json

    path = tmp_path / "x.json"
    path.write_text('{\n  "a": 1,\n  "b": \n}\n')
    with pytest.raises(json.JSONDecodeError, match=rf"{path}: not valid JSON \(Expecting value\): line 4 column 1"):
        atomic.read_json(path)


def test_an_unreadable_pool_file_names_the_file(tmp_root):
    from calibrank.study.data.querysets import load_pool_table
    from calibrank.study.data.schema import DataError
    from calibrank.study.settings.config import load_config

    cfg = load_config("smoke")
    path = paths.run_dir("smoke", "data", "chitchat") / "train.pool.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match=rf"{path}: not a readable Parquet file .*make nb-01_data PROFILE=smoke"):
        load_pool_table(cfg, "chitchat", "train")


def test_a_truncated_model_file_names_the_file(tmp_path):
    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.training import load_weights, save_weights

    model = CrossEncoder(load_backbone("tiny-random", seed=0), seed=0)
    path = tmp_path / "model.safetensors"
    save_weights(model, path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match=rf"{path}: not a readable safetensors file"):
        load_weights(model, path)
