"""Rankers I: deterministic, MC dropout, ensemble, temperature scaling, and Predictions."""

import numpy as np
import pytest

from calibrank.predictions import Predictions, PredictionsError
from calibrank.rankers import make_ranker
from calibrank.rankers.temperature import fit_temperature
from rankfix import learnable_queries, tiny_training

TRAIN, VALID, TEST = learnable_queries(64, 1, seed=0), learnable_queries(24, 3, seed=1), learnable_queries(20, 3, seed=2)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def _ranker(name, models_dir, **kw):
    return make_ranker(name, training=tiny_training(epochs=1), models_dir=models_dir, seed=3, **kw)


def test_deterministic_ranker_has_one_sample_and_zero_variance(models_dir):
    pred = _ranker("bert", models_dir).fit(TRAIN, VALID).predict(TEST)
    assert pred.samples.shape == (1, 20, 4) and np.allclose(pred.var, 0) and np.allclose(pred.cov, 0)
    assert np.allclose(pred.probs, pred.samples[0])
    assert pred.meta["n_parameters"] > 0 and pred.meta["inference_seconds"] > 0


def test_mc_dropout_passes_differ_from_each_other_and_from_eval_mode(models_dir):
    bert = _ranker("bert", models_dir).fit(TRAIN, VALID)
    mc = _ranker("mc_dropout", models_dir, passes=4).fit(TRAIN, VALID)
    assert mc.trained.workdir == bert.trained.workdir  # the same trained model, trained once
    pred = mc.predict(TEST)
    assert pred.samples.shape == (4, 20, 4)
    assert not np.allclose(pred.samples[0], pred.samples[1])
    assert not np.allclose(pred.samples[0], bert.predict(TEST).probs)
    assert (pred.var > 0).mean() > 0.9
    assert np.allclose(pred.probs, pred.samples.mean(axis=0))
    np.testing.assert_array_equal(pred.samples, mc.predict(TEST).samples)  # seeded masks


def test_ensemble_members_differ_by_seed_and_are_reproducible(models_dir, tmp_path):
    ens = _ranker("ensemble", models_dir, members=2).fit(TRAIN, VALID)
    pred = ens.predict(TEST)
    assert pred.samples.shape == (2, 20, 4) and not np.allclose(pred.samples[0], pred.samples[1])
    assert ens.trained[0].workdir == _ranker("bert", models_dir).fit(TRAIN, VALID).trained.workdir
    again = _ranker("ensemble", tmp_path, members=2).fit(TRAIN, VALID).predict(TEST)  # retrained from scratch
    np.testing.assert_allclose(again.samples, pred.samples, rtol=0, atol=1e-6)
    three = _ranker("ensemble", models_dir, members=3).fit(TRAIN, VALID)  # adding a member keeps the others
    assert [t.workdir for t in three.trained[:2]] == [t.workdir for t in ens.trained]


def test_ensemble_member_seeds_never_coincide_with_other_training_seeds(models_dir):
    seeds = {s: _ranker("ensemble", models_dir, members=4).__class__(training=tiny_training(), models_dir=models_dir,
                                                                      seed=s, members=4).member_seeds() for s in (3, 4, 5)}
    assert all(m[0] == s for s, m in seeds.items())  # member 0 is that seed's bert model
    spawned = [x for m in seeds.values() for x in m[1:]]
    assert len(set(spawned)) == len(spawned) and not set(spawned) & set(seeds)
    assert seeds[3] == make_ranker("ensemble", training=tiny_training(), models_dir=models_dir, seed=3, members=4).member_seeds()


def test_shared_model_scores_each_query_set_once_and_timing_bypasses_the_cache(models_dir):
    fresh = learnable_queries(10, 3, seed=7)  # queries no other test scored
    bert = _ranker("bert", models_dir).fit(TRAIN, VALID)
    first = bert.predict(fresh)
    cached = sorted((bert.trained.workdir / "logits").glob("*.npz"))
    assert cached  # written by the first scoring
    ens = _ranker("ensemble", models_dir, members=2).fit(TRAIN, VALID)
    calls = []
    import calibrank.rankers.base as base

    real = base.score_pairs

    def counting(model, pairs, **kw):
        calls.append(kw)
        return real(model, pairs, **kw)

    base.score_pairs = counting
    try:
        pred = ens.predict(fresh)  # member 0 is bert's model: its logits are read, member 1 is scored
        assert len(calls) == 1
        np.testing.assert_array_equal(pred.samples[0], first.probs)
        assert _ranker("bert", models_dir).fit(TRAIN, VALID).predict(fresh).meta["inference_seconds"] == first.meta["inference_seconds"]
        assert len(calls) == 1
        bert.reuse_logits = False
        np.testing.assert_array_equal(bert.predict(fresh).probs, first.probs)  # scored again, same numbers
        assert len(calls) == 2
    finally:
        base.score_pairs = real


def test_temperature_scaling_lowers_validation_nll_on_a_miscalibrated_fixture():
    rng = np.random.default_rng(0)
    true_logits = rng.normal(0, 1.5, size=4000)
    labels = (rng.random(4000) < 1 / (1 + np.exp(-true_logits))).astype(float)
    overconfident = 4.0 * true_logits

    def nll(z):
        return np.mean(np.logaddexp(0, z) - labels * z)

    t = fit_temperature(overconfident, labels)
    assert 3.0 < t < 5.0
    assert nll(overconfident / t) < nll(overconfident)
    with pytest.raises(ValueError, match="both 0 and 1"):
        fit_temperature(overconfident, np.ones_like(labels))


def test_temperature_ranker_keeps_the_ranking(models_dir):
    bert = _ranker("bert", models_dir).fit(TRAIN, VALID).predict(TEST)
    temp = _ranker("temperature", models_dir).fit(TRAIN, VALID)
    pred = temp.predict(TEST)
    assert pred.meta["temperature"] == temp.temperature > 0
    np.testing.assert_array_equal(np.argsort(-pred.probs, axis=1), np.argsort(-bert.probs, axis=1))


def test_make_ranker_rejects_unknown_names_and_params(models_dir):
    with pytest.raises(ValueError, match="unknown ranker 'bret'; known rankers: bert"):
        make_ranker("bret")
    with pytest.raises(TypeError, match="ranker 'mc_dropout'.*passes_"):
        make_ranker("mc_dropout", training=tiny_training(), models_dir=models_dir, passes_=3)
    with pytest.raises(ValueError, match="mc_dropout: passes: expected at least 2"):
        make_ranker("mc_dropout", training=tiny_training(), models_dir=models_dir, passes=1)


def test_predictions_round_trip_and_reject_bad_arrays(tmp_path):
    rng = np.random.default_rng(0)
    samples = rng.random((3, 5, 4))
    labels = np.zeros((5, 4), dtype=int)
    labels[:, 0] = 1
    pred = Predictions(qids=[f"q{i}" for i in range(5)], labels=labels, probs=samples.mean(0), samples=samples, meta={"ranker": "x"})
    back = Predictions.load(pred.save(tmp_path / "p"))
    np.testing.assert_array_equal(back.samples, pred.samples)
    assert back.meta["ranker"] == "x" and back.meta["shape"] == {"S": 3, "Q": 5, "K": 4}
    np.testing.assert_allclose(back.cov[0], np.cov(samples[:, 0, :].T, bias=True))
    with pytest.raises(PredictionsError, match=r"probs must be probabilities in \[0, 1\]; 4 values are not \(first: nan\)"):
        Predictions(qids=pred.qids, labels=labels, probs=np.where(np.eye(5, 4) > 0, np.nan, pred.probs), samples=samples)
    with pytest.raises(PredictionsError, match="samples must be"):
        Predictions(qids=pred.qids, labels=labels, probs=pred.probs, samples=samples[:, :4])
    other = Predictions(qids=pred.qids[::-1], labels=labels, probs=pred.probs, samples=samples)
    with pytest.raises(PredictionsError, match="different qids"):
        pred.check_aligned(other)


def test_predictions_whose_arrays_do_not_match_their_sidecar_are_rejected(tmp_path):
    rng = np.random.default_rng(1)
    labels = np.eye(3, 4, dtype=int)
    a = Predictions(qids=["a", "b", "c"], labels=labels, probs=rng.random((3, 4)), samples=rng.random((1, 3, 4)))
    b = Predictions(qids=["a", "b", "c"], labels=labels, probs=rng.random((3, 4)), samples=rng.random((1, 3, 4)))
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    (tmp_path / "b.npz").replace(tmp_path / "a.npz")  # new arrays beside the old sidecar
    with pytest.raises(PredictionsError, match="not the ones its sidecar a.json describes"):
        Predictions.load(tmp_path / "a")


def _pair_batch():
    import torch

    ids = torch.tensor([[101, 2000, 2001, 2002, 102, 3000, 3001, 102, 0], [101, 2003, 102, 3002, 3003, 3004, 3005, 102, 0]])
    tt = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 1, 0]])
    return ids, (ids > 0).long(), tt


def test_pooled_features_match_their_definitions():
    import torch

    from calibrank.backbone import load_backbone
    from calibrank.rankers.base import SEGMENT_COSINE_BIAS, SEGMENT_COSINE_WEIGHT, CrossEncoder

    ids, am, tt = _pair_batch()
    model = CrossEncoder(load_backbone("tiny-random"), pooling="mean").eval()
    with torch.no_grad():
        h = model.encoder(input_ids=ids, attention_mask=am, token_type_ids=tt).last_hidden_state
        mean = model.features(ids, am, tt)
    for i in range(2):
        n = int(am[i].sum())  # padding is left out of the mean
        torch.testing.assert_close(mean[i], h[i, :n].mean(0))
    seg = CrossEncoder(load_backbone("tiny-random"), pooling="segments").eval()
    with torch.no_grad():
        h = seg.encoder(input_ids=ids, attention_mask=am, token_type_ids=tt).last_hidden_state
        logits = seg(ids, am, tt)
    for i in range(2):
        ctx = (tt[i] == 0) & (am[i] == 1)
        resp = (tt[i] == 1) & (am[i] == 1)
        cos = torch.nn.functional.cosine_similarity(h[i, ctx].mean(0), h[i, resp].mean(0), dim=0)
        # the head starts as a scaled cosine of the two segments' mean states
        torch.testing.assert_close(logits[i], SEGMENT_COSINE_WEIGHT * cos + SEGMENT_COSINE_BIAS, rtol=1e-4, atol=1e-4)


def test_gp_heads_start_where_the_dense_head_starts_on_segment_features():
    import torch

    from calibrank.backbone import load_backbone
    from calibrank.rankers.base import CrossEncoder
    from calibrank.rankers.pg_gp import PGCrossEncoder
    from calibrank.rankers.sngp import SNGPCrossEncoder

    ids, am, tt = _pair_batch()
    with torch.no_grad():
        dense = CrossEncoder(load_backbone("tiny-random"), pooling="segments").eval()(ids, am, tt)
        sngp = SNGPCrossEncoder(load_backbone("tiny-random"), spectral_norm="none", pooling="segments").eval()
        gp_only = sngp.head.output(sngp.head.features(sngp.features(ids, am, tt))).squeeze(-1)
        # the GP's posterior mean = linear prior mean (the dense start) + Phi^T beta (small at start)
        torch.testing.assert_close(sngp(ids, am, tt) - gp_only, dense, rtol=1e-4, atol=1e-4)
        pg = PGCrossEncoder(load_backbone("tiny-random"), pooling="segments").eval()
        torch.testing.assert_close(pg.head.prior_mean(pg(ids, am, tt)).float(), dense, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="does not use"):
        SNGPCrossEncoder(load_backbone("tiny-random"), spectral_norm="pooler", pooling="segments")


@pytest.mark.parametrize("pooling", ["mean", "segments"])
def test_every_trainable_parameter_gets_a_gradient(pooling):
    """What data-parallel training needs: no trainable parameter left out of the graph (the pooler is frozen)."""
    from calibrank.backbone import load_backbone
    from calibrank.rankers.base import CrossEncoder

    ids, am, tt = _pair_batch()
    model = CrossEncoder(load_backbone("tiny-random"), pooling=pooling).train()
    model(ids, am, tt).sum().backward()
    assert not any(p.requires_grad for p in model.encoder.pooler.parameters())
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, missing
    with pytest.raises(ValueError, match="token_type_ids"):
        CrossEncoder(load_backbone("tiny-random"), pooling="segments")(ids, am, None)
