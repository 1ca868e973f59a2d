"""The training loop: learns, resumes to identical weights, stops on NaN; tokenisation and batching."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from calibrank.metrics.ranking import recall_at_k
from calibrank.pairs import length_batches
from calibrank.study.data.schema import DataError, RankingQuery
from calibrank.study.model.backbone import BackboneError, load_backbone
from calibrank.study.model.cross_encoder import CrossEncoder
from calibrank.study.model.losses import binary_cross_entropy, focal
from calibrank.study.model.rankers import make_ranker
from calibrank.study.model.training import TrainingDiverged, encode_pairs, train_model
from rankfix import learnable_queries, tiny_run, tiny_training


@pytest.fixture(scope="module")
def tokenizer():
    return load_backbone("tiny-random").tokenizer


def test_training_on_a_fixture_learns(tmp_path):
    ranker = make_ranker("bert", tiny_run(tmp_path))
    ranker.fit(learnable_queries(160, 1, seed=0), learnable_queries(30, 3, seed=1))
    losses = [h["loss"] for h in ranker.training_results()[0].history]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1  # loss falls
    pred = ranker.predict(learnable_queries(60, 3, seed=2))
    assert np.nanmean(recall_at_k(pred.probs, pred.labels, 1)) > 0.6  # chance is 0.25


def _loss(model, batch, labels):
    return binary_cross_entropy(model(**batch), labels)


def _fresh_model(seed=0):
    return CrossEncoder(load_backbone("tiny-random", seed=seed), seed=seed)


def test_resume_after_interruption_gives_the_same_weights(tmp_path, tokenizer):
    pairs = encode_pairs(tokenizer, learnable_queries(48, 1, seed=0), max_length=40, max_response_length=16)
    settings = tiny_training(epochs=2, checkpoint_every=3)  # 6 steps per epoch, 12 in all

    straight = _fresh_model()
    train_model(straight, _loss, pairs, settings, tmp_path / "straight", seed=5)

    class Interrupt(Exception):
        pass

    def stop_at_8(step):
        if step == 8:
            raise Interrupt

    interrupted = _fresh_model()
    with pytest.raises(Interrupt):
        train_model(interrupted, _loss, pairs, settings, tmp_path / "resumed", seed=5, on_step=stop_at_8)
    assert (tmp_path / "resumed" / "checkpoint.safetensors").exists()
    resumed = _fresh_model()
    result = train_model(resumed, _loss, pairs, settings, tmp_path / "resumed", seed=5)
    assert result.resumed_from == 6 and result.steps == 12
    a = load_file(str(tmp_path / "straight" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not (tmp_path / "resumed" / "checkpoint.safetensors").exists()  # cleaned up when finished


def test_nan_loss_stops_with_step_and_batch_and_keeps_the_last_good_checkpoint(tmp_path, tokenizer):
    pairs = encode_pairs(tokenizer, learnable_queries(48, 1, seed=0), max_length=40, max_response_length=16)
    calls = {"n": 0}

    def poisoned(model, batch, labels):
        calls["n"] += 1
        loss = _loss(model, batch, labels)
        return loss * float("nan") if calls["n"] == 5 else loss

    with pytest.raises(TrainingDiverged, match=r"loss is nan at step 5 \(epoch 0\).*queries \['q0-") as info:
        train_model(_fresh_model(), poisoned, pairs, tiny_training(checkpoint_every=2), tmp_path, seed=0)
    assert "checkpoint.safetensors" in str(info.value)
    assert (tmp_path / "checkpoint.safetensors").exists() and not (tmp_path / "model.safetensors").exists()


def test_truncation_keeps_the_most_recent_context(tokenizer):
    q = RankingQuery("q", ("oldest words here " * 10, "the newest turn"), ("a reply",), (1,))
    pairs = encode_pairs(tokenizer, [q], max_length=16, max_response_length=8)
    ids = pairs.input_ids[0]
    assert len(ids) <= 16
    text = tokenizer.decode(ids)
    assert "the newest turn [SEP] a reply [SEP]" in text and text.startswith("[CLS]")
    assert pairs.token_type_ids[0].count(1) == len(tokenizer("a reply", add_special_tokens=False)["input_ids"]) + 1


def test_bad_inputs_of_the_loop(tokenizer, tmp_path):
    long = RankingQuery("q-long", ("hi",), ("word " * 50,), (1,))
    with pytest.raises(DataError, match=r"q-long.*leaves no room for context within max_length=16"):
        encode_pairs(tokenizer, [long], max_length=16, max_response_length=None)
    assert encode_pairs(tokenizer, [long], max_length=16, max_response_length=8).truncated_responses == 1
    norel = RankingQuery("q-norel", ("hi",), ("a", "b"), (0, 0))
    with pytest.raises(DataError, match="q-norel.*no relevant candidate"):
        encode_pairs(tokenizer, [norel], max_length=16, max_response_length=8, require_relevant=True)
    ragged = [RankingQuery("a", ("hi",), ("x", "y"), (1, 0)), RankingQuery("b", ("hi",), ("x",), (1,))]
    with pytest.raises(DataError, match="'b' has 1 candidates"):
        encode_pairs(tokenizer, ragged, max_length=16, max_response_length=8)


def test_unknown_checkpoint_fails_fast_offline():
    with pytest.raises(BackboneError, match="bert-base-cased-nonexistent.*No download is attempted"):
        load_backbone("bert-base-cased-nonexistent")


def test_length_batches_cover_every_pair_once_and_are_seeded():
    lengths = np.random.default_rng(0).integers(5, 60, size=203)
    b1 = length_batches(lengths, 16, seed=1, epoch=0)
    assert sorted(np.concatenate(b1).tolist()) == list(range(203))
    assert all(len(b) <= 16 for b in b1)
    assert [x.tolist() for x in b1] == [x.tolist() for x in length_batches(lengths, 16, seed=1, epoch=0)]
    assert [x.tolist() for x in b1] != [x.tolist() for x in length_batches(lengths, 16, seed=1, epoch=1)]
    spread = np.mean([np.ptp(lengths[b]) for b in b1])
    assert spread < np.ptp(lengths) / 2  # similar lengths share a batch
    inference = length_batches(lengths, 16)
    assert sorted(np.concatenate(inference).tolist()) == list(range(203))


def test_focal_loss_reduces_to_cross_entropy_at_gamma_zero_and_downweights_easy_pairs():
    logits = torch.tensor([3.0, -2.0, 0.1, 4.0])
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0])
    assert torch.allclose(focal(logits, labels, gamma=0.0), binary_cross_entropy(logits, labels))
    assert focal(logits, labels, gamma=2.0) < binary_cross_entropy(logits, labels)
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        focal(logits, labels, gamma=-1)


def test_non_finite_gradient_with_a_finite_loss_stops_before_the_update(tmp_path, tokenizer):
    pairs = encode_pairs(tokenizer, learnable_queries(48, 1, seed=0), max_length=40, max_response_length=16)
    calls = {"n": 0}

    def nan_gradient(model, batch, labels):
        calls["n"] += 1
        loss = _loss(model, batch, labels)
        if calls["n"] == 3:  # sqrt'(0) = inf, times 0 = nan: the loss stays finite, the gradient does not
            loss = loss + torch.sqrt(0 * model.head.weight.sum())
        return loss

    model = _fresh_model()
    with pytest.raises(TrainingDiverged, match=r"gradient norm is nan at step 3 .* the weights were not updated"):
        train_model(model, nan_gradient, pairs, tiny_training(), tmp_path, seed=0)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_fused_adamw_gives_the_weights_of_the_reference_update(tmp_path, tokenizer, monkeypatch):
    """The loop's fused AdamW (a speed change) stays within rounding of the per-tensor update."""
    pairs = encode_pairs(tokenizer, learnable_queries(48, 1, seed=0), max_length=40, max_response_length=16)
    settings = tiny_training(epochs=1, hidden_dropout=0.0)
    fused = _fresh_model()
    train_model(fused, _loss, pairs, settings, tmp_path / "fused", seed=5)

    adamw = torch.optim.AdamW
    monkeypatch.setattr(
        torch.optim, "AdamW", lambda groups, **kw: adamw(groups, **{**kw, "fused": False, "foreach": False})
    )
    reference = _fresh_model()
    train_model(reference, _loss, pairs, settings, tmp_path / "reference", seed=5)
    a = load_file(str(tmp_path / "fused" / "model.safetensors"))
    b = load_file(str(tmp_path / "reference" / "model.safetensors"))
    init = _fresh_model().state_dict()
    moved = max(float((b[k] - init[k]).abs().max()) for k in b if k in init)
    assert moved > 1e-3  # the weights did move, so agreement below is not trivial
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5)


def test_constant_schedule_and_last_weights_as_the_first_papers_code(tmp_path, tokenizer):
    from calibrank.study.model.training import _lr_factor

    # linear: warm-up to the full lr, then down to 0; constant: the full lr after the warm-up
    assert [_lr_factor(s, 10, 2) for s in (0, 1, 2, 9)] == [0.5, 1.0, 1.0, 0.125]  # (10 - 9) / (10 - 2)
    assert [_lr_factor(s, 10, 2, "constant") for s in (0, 1, 2, 9)] == [0.5, 1.0, 1.0, 1.0]
    pairs = encode_pairs(tokenizer, learnable_queries(48, 1, seed=0), max_length=40, max_response_length=16)
    worse_later = iter([0.9, 0.1, 0.1, 0.1, 0.1, 0.1])  # the best validation is the first: early selection keeps it

    def validate(model):
        return next(worse_later)

    settings = tiny_training(epochs=1, eval_every=1, schedule="constant")
    best = train_model(_fresh_model(), _loss, pairs, settings, tmp_path / "best", seed=5, validate=validate)
    assert best.best_step == 1 and [h["lr"] for h in best.history][-1] == pytest.approx(tiny_training().lr)
    worse_later = iter([0.9, 0.1, 0.1, 0.1, 0.1, 0.1])
    last = train_model(
        _fresh_model(),
        _loss,
        pairs,
        tiny_training(epochs=1, eval_every=1, selection="last"),
        tmp_path / "last",
        seed=5,
        validate=validate,
    )
    assert last.best_step == last.steps == 6 and len(last.validation) == 6  # validated, but the last weights kept
    a = load_file(str(tmp_path / "best" / "model.safetensors"))
    b = load_file(str(tmp_path / "last" / "model.safetensors"))
    assert not all(torch.equal(a[k], b[k]) for k in a)
