"""Data-parallel training (torchrun, gloo on CPU) gives the single-process model.

Two processes split every global batch of 16 pairs into shares of 8; with dropout off and
fp32 the weights after training must equal those of one process training on the same
global batches (up to floating-point rounding: the shares are padded to their own widths and
the gradients are summed in another order). The distributed run also validates (process 0
only, the metric broadcast), and resumes an interrupted run from its checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from calibrank.metrics.ranking import recall_at_k
from calibrank.pairs import score_pairs
from calibrank.study.model.backbone import load_backbone
from calibrank.study.model.cross_encoder import CrossEncoder
from calibrank.study.model.losses import binary_cross_entropy
from calibrank.study.model.training import encode_pairs, train_model
from rankfix import learnable_queries, tiny_training

TESTS = Path(__file__).resolve().parent
SETTINGS = dict(epochs=2, batch_size=16, hidden_dropout=0.0, precision="fp32", checkpoint_every=3, eval_every=4)

# Run by torchrun in every process. Writes, per process, the final state of (a) a straight run
# and (b) a run interrupted after step 8 and resumed, plus the validation history.
SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    import numpy as np
    import torch
    from safetensors.torch import save_file

    torch.set_num_threads(1)

    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.losses import binary_cross_entropy
    from calibrank.metrics.ranking import recall_at_k
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.training import encode_pairs, train_model
    from calibrank.pairs import score_pairs
    from rankfix import learnable_queries, tiny_training

    out = Path(sys.argv[1])
    settings = tiny_training(**json.loads(sys.argv[2]))
    rank = int(os.environ["RANK"])
    tokenizer = load_backbone("tiny-random").tokenizer
    pairs = encode_pairs(tokenizer, learnable_queries(60, 1, seed=0), max_length=40, max_response_length=16)
    valid = encode_pairs(tokenizer, learnable_queries(12, 3, seed=1), max_length=40, max_response_length=16)

    def model():
        return CrossEncoder(load_backbone("tiny-random", seed=0, hidden_dropout=0.0), head_dropout=0.0, seed=0)

    def loss(m, batch, labels):
        return binary_cross_entropy(m(**batch), labels)

    calls = []

    def validate(m):  # grows with every call (the last model is selected), plus R@1 from a real scoring pass
        scores = score_pairs(m, valid, precision="fp32")[0].reshape(len(valid.qids), valid.n_candidates)
        calls.append(1)
        return len(calls) + 1e-3 * float(np.nanmean(recall_at_k(scores, valid.labels.reshape(scores.shape), 1)))

    class Interrupt(Exception):
        pass

    def stop_at_8(step):
        if step == 8:
            raise Interrupt

    straight = model()
    result = train_model(straight, loss, pairs, settings, out / "straight", seed=3, validate=validate)
    save_file({k: v.contiguous() for k, v in straight.state_dict().items()}, str(out / f"straight-rank{rank}.safetensors"))
    (out / f"result-rank{rank}.json").write_text(json.dumps(result.to_dict()))

    try:
        train_model(model(), loss, pairs, settings, out / "resumed", seed=3, validate=validate, on_step=stop_at_8)
    except Interrupt:
        pass
    resumed = model()
    again = train_model(resumed, loss, pairs, settings, out / "resumed", seed=3, validate=validate)
    assert again.resumed_from == 6, again.resumed_from
    save_file({k: v.contiguous() for k, v in resumed.state_dict().items()}, str(out / f"resumed-rank{rank}.safetensors"))
    """
)


def _model():
    return CrossEncoder(load_backbone("tiny-random", seed=0, hidden_dropout=0.0), head_dropout=0.0, seed=0)


def _loss(model, batch, labels):
    return binary_cross_entropy(model(**batch), labels)


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a if a[k].is_floating_point())


def test_two_processes_train_the_single_process_model(tmp_path):
    tokenizer = load_backbone("tiny-random").tokenizer
    pairs = encode_pairs(tokenizer, learnable_queries(60, 1, seed=0), max_length=40, max_response_length=16)
    valid = encode_pairs(tokenizer, learnable_queries(12, 3, seed=1), max_length=40, max_response_length=16)
    assert len(pairs) % 16 != 0  # the last global batch is short: shares of unequal size are covered too

    calls = []

    def validate(m):  # as in SCRIPT: the last model is selected, so the comparison covers every step
        scores = score_pairs(m, valid, precision="fp32")[0].reshape(len(valid.qids), valid.n_candidates)
        calls.append(1)
        return len(calls) + 1e-3 * float(np.nanmean(recall_at_k(scores, valid.labels.reshape(scores.shape), 1)))

    single = _model()
    initial = {k: v.clone() for k, v in single.state_dict().items()}
    reference = train_model(
        single, _loss, pairs, tiny_training(**SETTINGS), tmp_path / "single", seed=3, validate=validate
    )
    expected = {k: v.clone() for k, v in single.state_dict().items()}

    script = tmp_path / "ddp_train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "ddp"
    out.mkdir()
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        TQDM_DISABLE="1",
        CUDA_VISIBLE_DEVICES="",
        PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--standalone",
            str(script),
            str(out),
            json.dumps(SETTINGS),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]

    rank0 = load_file(str(out / "straight-rank0.safetensors"))
    rank1 = load_file(str(out / "straight-rank1.safetensors"))
    on_disk = load_file(str(out / "straight" / "model.safetensors"))
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)  # every process ends with the same weights
    assert all(torch.equal(rank0[k], on_disk[k]) for k in rank0)  # and process 0 wrote them
    assert _max_diff(expected, initial) > 1e-3  # training moved the weights
    assert _max_diff(rank0, expected) < 1e-5  # the single-process update, up to rounding

    result = json.loads((out / "result-rank0.json").read_text())
    assert result["steps"] == reference.steps == 16
    assert [v["step"] for v in result["validation"]] == [v["step"] for v in reference.validation]
    assert np.allclose(
        [v["metric"] for v in result["validation"]], [v["metric"] for v in reference.validation], atol=1e-4
    )
    assert result["best_step"] == reference.best_step == 16
    assert np.allclose([h["loss"] for h in result["history"]], [h["loss"] for h in reference.history], atol=1e-5)
    assert json.loads((out / "result-rank1.json").read_text())["validation"] == result["validation"]  # broadcast

    resumed = load_file(str(out / "resumed-rank0.safetensors"))  # interrupted at step 8 of 16, resumed from step 6
    assert all(torch.equal(resumed[k], rank0[k]) for k in rank0)
    assert all(torch.equal(resumed[k], load_file(str(out / "resumed-rank1.safetensors"))[k]) for k in resumed)
    assert not (out / "resumed" / "checkpoint.safetensors").exists()


def test_no_process_group_outside_torchrun(monkeypatch):
    from calibrank.study.model.training import setup_distributed

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert setup_distributed(None) == (0, 1, torch.device("cpu"))
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two'"):
        setup_distributed(None)
