"""Rankers I: deterministic, MC dropout, ensemble, temperature scaling, and Predictions; the run every ranker
shares, and the model key's settings."""

import dataclasses

import numpy as np
import pytest

from calibrank.predictions import Predictions, PredictionsError
from calibrank.study.model.rankers import RankerRun, make_ranker
from calibrank.study.model.rankers.temperature import fit_temperature
from rankfix import learnable_queries, tiny_run, tiny_training

TRAIN, VALID, TEST = (
    learnable_queries(64, 1, seed=0),
    learnable_queries(24, 3, seed=1),
    learnable_queries(20, 3, seed=2),
)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def _ranker(name, models_dir, **kw):
    return make_ranker(name, tiny_run(models_dir, seed=3, epochs=1), **kw)


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
    seeds = {
        s: _ranker("ensemble", models_dir, members=4).__class__(tiny_run(models_dir, seed=s), members=4).member_seeds()
        for s in (3, 4, 5)
    }
    assert all(m[0] == s for s, m in seeds.items())  # member 0 is that seed's bert model
    spawned = [x for m in seeds.values() for x in m[1:]]
    assert len(set(spawned)) == len(spawned) and not set(spawned) & set(seeds)
    assert seeds[3] == make_ranker("ensemble", tiny_run(models_dir, seed=3), members=4).member_seeds()


def test_shared_model_scores_each_query_set_once_and_timing_bypasses_the_cache(models_dir):
    fresh = learnable_queries(10, 3, seed=7)  # queries no other test scored
    bert = _ranker("bert", models_dir).fit(TRAIN, VALID)
    first = bert.predict(fresh)
    cached = sorted((bert.trained.workdir / "logits").glob("*.npz"))
    assert cached  # written by the first scoring
    ens = _ranker("ensemble", models_dir, members=2).fit(TRAIN, VALID)
    calls = []
    import calibrank.study.model.rankers.scoring as base

    real = base.score_pairs

    def counting(model, pairs, **kw):
        calls.append(kw)
        return real(model, pairs, **kw)

    base.score_pairs = counting
    try:
        pred = ens.predict(fresh)  # member 0 is bert's model: its logits are read, member 1 is scored
        assert len(calls) == 1
        np.testing.assert_array_equal(pred.samples[0], first.probs)
        assert (
            _ranker("bert", models_dir).fit(TRAIN, VALID).predict(fresh).meta["inference_seconds"]
            == first.meta["inference_seconds"]
        )
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
        make_ranker("bret", tiny_run(models_dir))
    with pytest.raises(TypeError, match="ranker 'mc_dropout'.*passes_"):
        make_ranker("mc_dropout", tiny_run(models_dir), passes_=3)
    with pytest.raises(ValueError, match="mc_dropout: passes: expected at least 2"):
        make_ranker("mc_dropout", tiny_run(models_dir), passes=1)


# ----------------------------------------------------------------------------- the run every ranker shares


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("seed", -1, r"^seed: expected an integer in 0..2\*\*32-1, got -1$"),
        ("seed", 2**32, r"^seed: expected an integer in 0..2\*\*32-1"),
        ("seed", 1.5, r"^seed: expected an integer"),
        (
            "context_style",
            "tagged",
            r"^context_style: expected one of 'plain', 'separators', 'utterance_sep', got 'tagged'$",
        ),
        ("device", "gpu", r"^device: expected a torch device such as 'cpu' or 'cuda:0', got 'gpu'$"),
        ("training", {"lr": 1e-3}, r"^training: expected a TrainingConfig, got dict$"),
        ("models_dir", 3, r"^models_dir: expected a folder path, got int$"),
    ],
)
def test_a_run_is_checked_where_built_and_names_the_setting(tmp_path, field, value, match):
    from calibrank.study.settings.checks import ConfigError

    with pytest.raises(ConfigError, match=match):
        RankerRun(**{"training": tiny_training(), "models_dir": tmp_path, field: value})


def test_a_run_is_resolved_for_the_machine_and_rankers_read_it(tmp_path):
    """The device and the scoring batch the profile leaves open are set where the run is built; a ranker holds
    the run and reads its settings from it, read-only."""
    import doctest

    import torch

    from calibrank.study.model.rankers import run as run_module
    from calibrank.study.settings.choices import ContextStyle

    run = RankerRun(tiny_training(eval_batch_size=None), str(tmp_path), seed=np.int64(7), context_style="separators")
    assert run.device == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert run.training.eval_batch_size == (1024 if torch.cuda.is_available() else 64)
    assert run.models_dir == tmp_path and type(run.seed) is int and run.seed == 7
    assert run.context_style is ContextStyle.separators
    assert dataclasses.replace(run) == run  # resolving again changes nothing
    assert RankerRun(tiny_training(eval_batch_size=5), tmp_path, device="cpu").training.eval_batch_size == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.seed = 8
    mc = make_ranker("mc_dropout", run, passes=3)
    assert mc.run is run and (mc.training, mc.models_dir, mc.seed, mc.context_style, mc.device) == (
        run.training,
        run.models_dir,
        run.seed,
        run.context_style,
        run.device,
    )
    with pytest.raises(AttributeError):
        mc.seed = 8
    assert doctest.testmod(run_module).failed == 0


def test_a_ranker_is_built_from_a_run_not_from_its_parts(tmp_path):
    from calibrank.study.model.rankers.deterministic import DeterministicRanker

    with pytest.raises(TypeError, match="DeterministicRanker: expected a RankerRun .* got TrainingConfig"):
        DeterministicRanker(tiny_training())
    with pytest.raises(TypeError, match="ranker 'mc_dropout': MCDropoutRanker: expected a RankerRun"):
        make_ranker("mc_dropout", tiny_training(), passes=3)
    with pytest.raises(TypeError, match="ranker 'bert'.*seed"):  # the run's settings are not a ranker's
        make_ranker("bert", tiny_run(tmp_path), seed=3)


def test_a_ranker_from_the_profile_has_its_run_and_its_section(tmp_path):
    from calibrank.study.model.rankers import ranker_from_config
    from calibrank.study.settings.config import load_config

    cfg = load_config("smoke", {"rankers.seeds": [5, 2], "data.context_style": "separators"})
    mc = ranker_from_config(cfg, "mc_dropout", tmp_path, device="cpu")
    assert mc.run == RankerRun(cfg.training, tmp_path, seed=5, context_style="separators", device="cpu")
    assert mc.passes == cfg.rankers.mc_dropout.passes == 3
    assert ranker_from_config(cfg, "sngp", tmp_path, device="cpu", seed=2).run.seed == 2


#: A ranker's settings that never change the weights its models train to: they are read when predicting (and
#: are part of the logits key where logits are cached: MC Dropout's passes and masks), or choose which models
#: are trained (the ensemble's members). Every other setting must change the model key.
NOT_IN_MODEL_KEY = {
    "mc_dropout": {"passes", "masks"},
    "ensemble": {"members"},
    "sngp": {"samples"},
    "gpf_bert": {"samples"},
    "pg_drr": {"samples", "quadrature_points"},
}


def _another(field, value):
    """A valid value of a ranker setting other than ``value``."""
    import enum

    if field == "nu":
        return 1.5  # Matérn smoothness: one of 0.5, 1.5, 2.5
    if isinstance(value, enum.Enum):
        return next(m for m in type(value) if m is not value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2
    return 0.5  # None: an exact sum or the training rate; a number in (0, 1) is a valid momentum and rate


def test_every_setting_that_changes_training_is_in_the_model_key(tmp_path):
    """What the model key holds of a ranker's settings (``model_key_extra``, keys.py) drops none of them: each
    setting of each registered ranker changes its model folder unless it is one of :data:`NOT_IN_MODEL_KEY`."""
    from calibrank.study.model.rankers import ranker_class
    from calibrank.study.settings import registry
    from calibrank.study.settings.config import build_section
    from calibrank.study.settings.schema import RankersConfig

    queries, run = learnable_queries(4, 1, seed=0), tiny_run(tmp_path, seed=3)
    # settings that only count beside another: the focal gamma with the focal loss, nu with the Matérn kernel
    base = {"sngp": {"loss": "focal"}, "pg_drr": {"kernel": "matern"}}
    for name in registry.RANKERS:
        section = getattr(RankersConfig(), name, None)
        if section is None:
            continue
        settings = dataclasses.asdict(
            build_section(type(section), {**dataclasses.asdict(section), **base.get(name, {})})
        )
        folders = ranker_class(name)(run, **settings).model_dirs(queries)
        for field, value in settings.items():
            changed = ranker_class(name)(run, **{**settings, field: _another(field, value)}).model_dirs(queries)
            assert (changed[0] == folders[0]) == (field in NOT_IN_MODEL_KEY.get(name, ())), (name, field)


def test_predictions_round_trip_and_reject_bad_arrays(tmp_path):
    rng = np.random.default_rng(0)
    samples = rng.random((3, 5, 4))
    labels = np.zeros((5, 4), dtype=int)
    labels[:, 0] = 1
    pred = Predictions(
        qids=[f"q{i}" for i in range(5)], labels=labels, probs=samples.mean(0), samples=samples, meta={"ranker": "x"}
    )
    back = Predictions.load(pred.save(tmp_path / "p"))
    np.testing.assert_array_equal(back.samples, pred.samples)
    assert back.meta["ranker"] == "x" and back.meta["shape"] == {"S": 3, "Q": 5, "K": 4}
    np.testing.assert_allclose(back.cov[0], np.cov(samples[:, 0, :].T, bias=True))
    with pytest.raises(
        PredictionsError, match=r"probs must be probabilities in \[0, 1\]; 4 values are not \(first: nan\)"
    ):
        Predictions(
            qids=pred.qids, labels=labels, probs=np.where(np.eye(5, 4) > 0, np.nan, pred.probs), samples=samples
        )
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

    ids = torch.tensor(
        [[101, 2000, 2001, 2002, 102, 3000, 3001, 102, 0], [101, 2003, 102, 3002, 3003, 3004, 3005, 102, 0]]
    )
    tt = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 1, 0]])
    return ids, (ids > 0).long(), tt


def test_pooled_features_match_their_definitions():
    import torch

    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import SEGMENT_COSINE_BIAS, SEGMENT_COSINE_WEIGHT, CrossEncoder

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

    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.rankers.pg_gp import PGCrossEncoder
    from calibrank.study.model.rankers.sngp import SNGPCrossEncoder

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
    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder

    ids, am, tt = _pair_batch()
    model = CrossEncoder(load_backbone("tiny-random"), pooling=pooling).train()
    model(ids, am, tt).sum().backward()
    assert not any(p.requires_grad for p in model.encoder.pooler.parameters())
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, missing
    with pytest.raises(ValueError, match="token_type_ids"):
        CrossEncoder(load_backbone("tiny-random"), pooling="segments")(ids, am, None)


def test_mc_dropout_per_pair_masks_are_the_unchanged_training_mode_passes(models_dir):
    """``masks: per_pair`` is the first paper's scoring: score_pairs in training mode, one torch RNG seeded with the seed."""
    from calibrank.pairs import score_pairs
    from calibrank.study.model.rankers.scoring import sigmoid

    mc = _ranker("mc_dropout", models_dir, passes=3, masks="per_pair").fit(TRAIN, VALID)
    mc.reuse_logits = False
    pred = mc.predict(TEST)
    assert pred.meta["masks"] == "per_pair" and pred.meta["passes"] == 3
    pairs = mc._encode(mc.trained.backbone.tokenizer, TEST)
    reference = score_pairs(
        mc.trained.model,
        pairs,
        batch_size=mc.training.eval_batch_size,
        passes=3,
        dropout=True,
        seed=3,
        precision=mc.training.precision,
    )
    np.testing.assert_array_equal(pred.samples, sigmoid(reference).reshape(3, 20, 4))
    assert mc.predict_many([TEST, TEST[:5]])[1].meta.get("shared_scoring") is None  # per-pair masks share nothing


def test_mc_dropout_per_query_masks_are_shared_by_the_candidates_of_a_query_within_a_pass(models_dir):
    from calibrank.study.data.schema import RankingQuery

    def doubled(q):  # a negative listed twice, first and last: K = 5
        j = q.labels.index(0)
        rest = [i for i in range(len(q.candidates)) if i != j]
        return RankingQuery(
            q.qid,
            q.context,
            (q.candidates[j], *(q.candidates[i] for i in rest), q.candidates[j]),
            (0, *(q.labels[i] for i in rest), 0),
        )

    queries = [doubled(q) for q in TEST]
    mc = _ranker("mc_dropout", models_dir, passes=4).fit(TRAIN, VALID)
    assert mc.masks == "per_query"
    pred = mc.predict(queries)
    assert pred.meta["masks"] == "per_query" and pred.samples.shape == (4, 20, 5)
    # one mask per query and pass: the two copies get the same sample in every pass ...
    np.testing.assert_array_equal(pred.samples[:, :, 0], pred.samples[:, :, 4])
    # ... and a new one in the next pass
    assert (pred.samples[0, :, 0] != pred.samples[1, :, 0]).all()
    assert (pred.var > 0).mean() > 0.9
    mc.reuse_logits = False
    np.testing.assert_array_equal(pred.samples, mc.predict(queries).samples)  # seeded: the same numbers again
    other = make_ranker("mc_dropout", dataclasses.replace(mc.run, seed=4), passes=4)
    other.trained, other.reuse_logits = mc.trained, False  # the same model, the masks of another seed
    assert not np.array_equal(other.predict(queries).samples, pred.samples)
    per_pair = _ranker("mc_dropout", models_dir, passes=4, masks="per_pair").fit(TRAIN, VALID).predict(queries)
    assert (per_pair.samples[:, :, 0] != per_pair.samples[:, :, 4]).any()  # a mask per pair: the copies differ


def test_mc_dropout_per_query_mask_follows_the_query_id_not_its_companions(models_dir):
    """A query's masks depend on (seed, pass, query id): alone or among others, its samples are the same."""
    mc = make_ranker("mc_dropout", tiny_run(models_dir, seed=3, epochs=1, eval_batch_size=1), passes=3).fit(
        TRAIN, VALID
    )  # one pair per batch: no floating-point batch effects
    mc.reuse_logits = False
    full = mc.predict(TEST)
    alone = mc.predict(TEST[7:8])
    np.testing.assert_array_equal(full.samples[:, 7:8], alone.samples)


def test_mc_dropout_masks_option_is_checked(models_dir):
    with pytest.raises(ValueError, match="masks: expected one of 'per_query', 'per_pair', got 'per_batch'"):
        make_ranker("mc_dropout", tiny_run(models_dir), masks="per_batch")


def test_mc_dropout_and_bert_inference_side_by_side_on_the_tiny_model(models_dir, capsys):
    """Records (prints) the ratio of MC Dropout's inference time to bert's; nothing about time is asserted."""
    import time

    queries = learnable_queries(40, 9, seed=11)
    bert = _ranker("bert", models_dir).fit(TRAIN, VALID)
    rankers = {
        "bert": bert,
        **{
            m: _ranker("mc_dropout", models_dir, passes=5, masks=m).fit(TRAIN, VALID) for m in ("per_query", "per_pair")
        },
    }
    seconds = {}
    for name, r in rankers.items():
        r.reuse_logits = False
        r.predict(queries[:2])
        t0 = time.perf_counter()
        r.predict(queries)
        seconds[name] = time.perf_counter() - t0
    with capsys.disabled():
        print(
            "\ntiny model, T=5, 400 pairs: "
            + ", ".join(f"{k} {v / seconds['bert']:.2f}x bert" for k, v in seconds.items())
        )


def test_mc_dropout_per_query_masks_of_a_narrower_batch_are_a_prefix_of_the_full_mask():
    """Per-query masks draw only the batch's width: torch's CPU uniform numbers come one after the other,
    so a shorter draw from the same seed is the start of a longer one (the mask never depends on the batch)."""
    import torch

    g = torch.Generator()
    for n, w in ((96 * 384, 40 * 384), (96 * 12, 17 * 12), (40 * 32, 1 * 32)):
        g.manual_seed(7)
        full = torch.empty(n).uniform_(generator=g)
        g.manual_seed(7)
        assert torch.equal(torch.empty(w).uniform_(generator=g), full[:w])


def test_probabilities_of_extreme_logits_raise_no_overflow_warning():
    import warnings

    from calibrank.study.model.rankers.scoring import sigmoid

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.exp(1000) warned of an overflow
        p = sigmoid(np.array([-1000.0, 0.0, 1000.0], dtype=np.float32))
    assert p.dtype == np.float64 and p.tolist() == [0.0, 0.5, 1.0]
