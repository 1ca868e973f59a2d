"""Rankers II: SNGP, GPF-BERT, focal-loss BERT and PG-DRR on the tiny-random backbone."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from calibrank.pairs import collate
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.gp.gaussian import draw_joint
from calibrank.study.model.gp.polya_gamma import gauss_hermite_sigmoid
from calibrank.study.model.gp.spectral import SpectralNormLinear
from calibrank.study.model.losses import binary_cross_entropy, focal
from calibrank.study.model.rankers.focal import FocalRanker, GPFBertRanker
from calibrank.study.model.rankers.pg_gp import PGDRRRanker, pg_param_groups
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import encode_features
from calibrank.study.model.rankers.sngp import SNGPRanker
from calibrank.study.settings.schema import GPFBertConfig, PGDRRConfig, SNGPConfig
from rankfix import learnable_queries, tiny_training

TRAIN, VALID, TEST = (
    learnable_queries(64, 1, seed=0),
    learnable_queries(24, 3, seed=1),
    learnable_queries(20, 3, seed=2),
)
SNGP_KW = dict(n_features=128, samples=7)
PG_KW = dict(inducing=48, gibbs_chains=8, samples=9, length_scale=0.01)


def _training(**kw):
    return tiny_training(**{"epochs": 2, **kw})


def _make(cls, models_dir, training=None, **kw):
    return cls(RankerRun(training or _training(), models_dir, seed=3), **kw)


def _random_token_queries(tokenizer, n: int = 20, k: int = 4) -> list[RankingQuery]:
    """Unrelated random-token contexts and candidates: far from the fixture's sentences."""
    rng = np.random.default_rng(0)
    vocab = sorted(w for w in tokenizer.get_vocab() if w.isalpha())
    return [
        RankingQuery(
            f"ood{i}",
            (" ".join(rng.choice(vocab, 8)),),
            tuple(" ".join(rng.choice(vocab, 6)) for _ in range(k)),
            (1,) + (0,) * (k - 1),
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def sngp(models_dir):
    return _make(SNGPRanker, models_dir, **SNGP_KW).fit(TRAIN, VALID)


@pytest.fixture(scope="module")
def pg(models_dir):
    return _make(PGDRRRanker, models_dir, **PG_KW).fit(TRAIN, VALID)


# ----------------------------------------------------------------------------- SNGP


def test_sngp_predicts_mean_field_probs_and_joint_samples(sngp):
    pred = sngp.predict(TEST)
    assert pred.samples.shape == (7, 20, 4) and pred.probs.shape == (20, 4)
    assert (pred.var > 0).all()
    assert pred.meta["ranker"] == "sngp" and pred.meta["n_parameters"] > 0
    # probs = sigmoid of the GP layer's own mean-field logits
    trained = sngp.trained
    pairs = sngp._encode(trained.backbone.tokenizer, TEST)
    h = encode_features(trained.model, pairs, batch_size=64, precision="fp32")
    with torch.no_grad():
        mf = trained.model.head.mean_field_logits(h).double().numpy().reshape(20, 4)
        post_mean, post_var = (t.double().numpy().reshape(20, 4) for t in trained.model.head.predictive(h))
    np.testing.assert_allclose(pred.probs, 1 / (1 + np.exp(-mf)), rtol=0, atol=1e-6)
    # the mean field shrinks toward 1/2: strictly closer than sigmoid(posterior mean) wherever the variance is > 0
    assert (post_var > 0).all()
    assert (np.abs(pred.probs - 0.5) < np.abs(1 / (1 + np.exp(-post_mean)) - 0.5)).all()
    # the joint covariance of a query equals predictive_joint of the layer
    mean, cov = sngp.joint_logits(TEST[:1])
    with torch.no_grad():
        m_ref, c_ref = trained.model.head.predictive_joint(h[:4])
    np.testing.assert_allclose(cov[0].numpy(), c_ref.double().numpy(), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(mean[0].numpy(), m_ref.double().numpy(), rtol=1e-5, atol=1e-7)
    # seeded: the same samples again
    np.testing.assert_array_equal(sngp.predict(TEST).samples, pred.samples)


def test_sngp_training_loss_is_bce_on_the_gp_mean(models_dir):
    # with zero-initialised GP output weights the first step's loss is log 2 exactly
    zero = _make(SNGPRanker, models_dir, output_init="zero", **SNGP_KW).fit(TRAIN, VALID)
    assert zero.trained.result.history[0]["loss"] == pytest.approx(math.log(2), abs=1e-6)


def test_sngp_output_weights_start_from_a_seeded_random_draw(sngp, models_dir):
    """Default ``output_init="dense"``: beta ~ U(+-1/sqrt(L)) as a dense layer; ``"prior"``: N(0, I / ridge)."""
    from calibrank.study.model.gp.random_features import RandomFeatureGP

    draws = [RandomFeatureGP(16, 4000, ridge=4.0, seed=s).output.weight.detach() for s in (0, 0, 1)]
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
    bound = 1 / math.sqrt(4000)
    assert float(draws[0].abs().max()) <= bound and float(draws[0].std()) == pytest.approx(
        bound / math.sqrt(3), rel=0.05
    )
    prior = RandomFeatureGP(16, 4000, ridge=4.0, seed=0, output_init="prior").output.weight.detach()
    assert float(prior.mean()) == pytest.approx(0.0, abs=0.05) and float(prior.std()) == pytest.approx(0.5, rel=0.05)
    assert float(RandomFeatureGP(16, 32, output_init="zero").output.weight.detach().abs().sum()) == 0.0
    with pytest.raises(ValueError, match="output_init"):
        RandomFeatureGP(16, 32, output_init="normal")
    # the cache key tells the initialisations apart
    zero = _make(SNGPRanker, models_dir, output_init="zero", **SNGP_KW)
    assert sngp.params()["output_init"] == "dense" and zero.params()["output_init"] == "zero"
    assert zero.model_dirs(TRAIN, VALID)[0].name != sngp.trained.workdir.name


def test_sngp_precision_reset_each_epoch_and_untouched_by_evaluation(sngp):
    head = sngp.trained.model.head
    before = sngp.precision_state()
    assert float(before["n_seen"]) == 128  # one epoch's pairs (2 epochs trained: reset at the second's start)
    assert not torch.allclose(before["precision"], head.ridge * torch.eye(head.n_features, dtype=torch.float64))
    sngp.predict(TEST)
    sngp.logit_moments(VALID)
    sngp._validator(sngp.trained.backbone.tokenizer, VALID)(sngp.trained.model)
    sngp.predict(TEST)
    after = sngp.precision_state()
    assert torch.equal(before["precision"], after["precision"]) and torch.equal(before["n_seen"], after["n_seen"])
    with pytest.raises(RuntimeError, match="eval mode"):
        head.update_precision(torch.zeros(2, head.n_features), torch.zeros(2))


def test_sngp_moving_average_precision(models_dir, sngp):
    ema = _make(SNGPRanker, models_dir, momentum=0.9, **SNGP_KW).fit(TRAIN, VALID)
    assert ema.trained.workdir != sngp.trained.workdir
    p_ema, p_sum = ema.precision_state()["precision"], sngp.precision_state()["precision"]
    eye = torch.eye(p_ema.shape[0], dtype=torch.float64)
    # eq. 5's average estimates one batch's share, the exact sum the whole epoch's
    assert 0 < torch.trace(p_ema - eye) < torch.trace(p_sum - eye)


def test_sngp_model_from_cache_has_the_same_variance(models_dir, sngp):
    fresh = _make(SNGPRanker, models_dir, **SNGP_KW).fit(TRAIN, VALID)
    assert fresh.trained.workdir == sngp.trained.workdir
    assert fresh.trained.model is not sngp.trained.model
    assert torch.equal(fresh.precision_state()["precision"], sngp.precision_state()["precision"])
    a, b = sngp.predict(TEST), fresh.predict(TEST)
    np.testing.assert_array_equal(a.probs, b.probs)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(sngp.logit_moments(TEST)[1], fresh.logit_moments(TEST)[1])


@pytest.mark.parametrize(
    "cls, kw", [(SNGPRanker, dict(n_features=256)), (PGDRRRanker, dict(inducing=64, gibbs_chains=8, projection=False))]
)
def test_variance_grows_far_from_the_training_data(tmp_path, cls, kw):
    # The tiny random BERT's pooled features differ by ~1e-3 between inputs, so the length
    # scale is set to that; a small lr and no dropout keep the features that built SNGP's
    # precision matrix where the final model puts them.
    ranker = _make(
        cls,
        tmp_path,
        training=tiny_training(epochs=1, lr=1e-5, hidden_dropout=0.0),
        length_scale=1e-3,
        head_dropout=0.0,
        **kw,
    ).fit(TRAIN)
    near = ranker.logit_moments(TEST)[1]
    far = ranker.logit_moments(_random_token_queries(ranker.trained.backbone.tokenizer))[1]
    assert far.mean() > 1.5 * near.mean()


def test_spectral_norm_placement(tmp_path):
    counts = {}
    for where in ("pooler", "none", "all"):
        ranker = _make(SNGPRanker, tmp_path, spectral_norm=where, n_features=8)
        model, backbone = ranker._build(0)
        wrapped = [n for n, m in model.named_modules() if isinstance(m, SpectralNormLinear)]
        counts[where] = len(wrapped)
        if where == "pooler":
            assert wrapped == ["encoder.pooler.dense"]
        pairs = ranker._encode(backbone.tokenizer, TEST[:2])
        batch = collate(pairs, np.arange(len(pairs)))
        model.eval()
        with torch.no_grad():
            assert model(**batch).shape == (8,)
        model.train()  # bf16 autocast with power iteration: sigma_hat = u^T W v must not mix dtypes
        with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            assert torch.isfinite(model(**batch).float()).all()
    plain, _ = _make(FocalRanker, tmp_path)._build(0)
    n_linear = sum(isinstance(m, nn.Linear) for m in plain.encoder.modules())
    assert counts == {"pooler": 1, "none": 0, "all": n_linear}


def test_draw_joint_matches_the_covariance():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 3))
    cov = torch.as_tensor(a @ a.transpose(0, 2, 1))
    cov[1] = cov[1, :1].T @ cov[1, :1]  # rank one: needs jitter
    mean = torch.as_tensor(rng.normal(size=(2, 3)))
    draws = draw_joint(mean, cov, 40000, np.random.default_rng(1)).numpy()
    np.testing.assert_allclose(np.cov(draws[:, 0].T), cov[0].numpy(), rtol=0.05, atol=0.05)
    np.testing.assert_allclose(draws.mean(0), mean.numpy(), atol=0.05)


# ----------------------------------------------------------------------------- focal and GPF-BERT


def test_adaptive_focal_follows_the_mukhoti_schedule():
    logits = torch.tensor([-3.0, -1.0, 0.0, 2.0, -2.5])
    labels = torch.tensor([1, 1, 0, 1, 0])
    z, y = logits.double(), labels.double()
    pt = torch.where(y == 1, torch.sigmoid(z), 1 - torch.sigmoid(z))
    gamma = torch.where(pt < 0.2, 5.0, 3.0)
    expected = (-((1 - pt) ** gamma) * torch.log(pt)).mean()
    assert float(focal(logits, labels, "adaptive")) == pytest.approx(float(expected), rel=1e-5)
    assert float(focal(logits, labels, 0.0)) == pytest.approx(float(binary_cross_entropy(logits, labels)), rel=1e-6)
    assert float(focal(logits, labels, 2)) == float(focal(logits, labels, 2.0))
    with pytest.raises(ValueError, match="gamma: expected a number >= 0 or one of 'adaptive'"):
        focal(logits, labels, "adaptiv")


def test_gpf_bert_is_sngp_trained_with_focal_loss(models_dir):
    gpf = _make(GPFBertRanker, models_dir, focal_gamma="adaptive", output_init="zero", **SNGP_KW).fit(TRAIN, VALID)
    # zero-initialised GP output: p_t = 1/2 at the first step, so gamma = 3 and the loss is 1/8 log 2
    assert gpf.trained.result.history[0]["loss"] == pytest.approx(0.125 * math.log(2), abs=1e-6)
    pred = gpf.predict(TEST)
    assert pred.meta["ranker"] == "gpf_bert" and pred.samples.shape == (7, 20, 4) and (pred.var > 0).all()
    # the same model as sngp with loss=focal and the same gamma (trained once)
    same = _make(SNGPRanker, models_dir, loss="focal", focal_gamma="adaptive", output_init="zero", **SNGP_KW).fit(
        TRAIN, VALID
    )
    assert same.trained.workdir == gpf.trained.workdir
    fixed = _make(GPFBertRanker, models_dir, **SNGP_KW)
    assert fixed.settings.focal_gamma == 2.0 and fixed.loss_kind == "focal"


def test_focal_ranker_is_a_point_estimate(models_dir):
    ranker = _make(FocalRanker, models_dir, gamma=2.0).fit(TRAIN, VALID)
    pred = ranker.predict(TEST)
    assert pred.samples.shape == (1, 20, 4) and np.allclose(pred.var, 0) and np.allclose(pred.probs, pred.samples[0])
    assert pred.meta["focal_gamma"] == 2.0
    # it learned the fixture's signal: the relevant candidate has the highest probability on (almost) every query
    top = pred.labels[np.arange(len(pred.labels)), pred.probs.argmax(axis=1)]
    assert top.mean() >= 0.9
    assert ranker.trained.workdir.name.startswith("focal-seed3-")
    other = _make(FocalRanker, models_dir, gamma=3.0)
    assert other.model_dirs(TRAIN, VALID)[0].name != ranker.trained.workdir.name


# ----------------------------------------------------------------------------- PG-DRR


def test_pg_drr_predicts_quadrature_probs_and_joint_samples(pg):
    pred = pg.predict(TEST)
    assert pred.samples.shape == (9, 20, 4)
    assert (pred.var > 0).all() and pred.meta["ranker"] == "pg_drr" and pred.meta["inducing"] == 48
    mean, var = pg.logit_moments(TEST)
    np.testing.assert_allclose(pred.probs, gauss_hermite_sigmoid(mean, var, 20), rtol=0, atol=1e-12)
    # E[sigmoid(f)] under a Gaussian with variance > 0 is strictly closer to 1/2 than sigmoid(E[f])
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    assert (var > 0).all() and (np.abs(pred.probs - 0.5) < np.abs(1 / (1 + np.exp(-mean)) - 0.5)).all()
    np.testing.assert_array_equal(pg.predict(TEST).samples, pred.samples)  # seeded


def test_pg_drr_predictive_is_eq14_moment_matched(pg):
    """The shared-factor predictive equals the GP module's per-chain eq. 14, moment matched, for a query."""
    trained, state = pg._require_fit(), pg.state
    pairs = pg._encode(trained.backbone.tokenizer, TEST[:1])
    x = encode_features(trained.model, pairs, batch_size=64, precision="fp32", fn=lambda m, b: m(**b))
    mu = trained.model.head.prior_mean(x).detach()
    m_ref, c_ref = state.posterior.predictive_joint(pg.kernel_fn(state.features, x), pg.kernel_fn(x, x), mu)
    mean, cov = pg.joint_logits(TEST[:1])
    np.testing.assert_allclose(mean[0].numpy(), m_ref.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cov[0].numpy(), c_ref.numpy(), rtol=1e-7, atol=1e-9)


def test_pg_drr_model_from_cache_predicts_identically(models_dir, pg):
    fresh = _make(PGDRRRanker, models_dir, **PG_KW).fit(TRAIN, VALID)
    assert fresh.trained.workdir == pg.trained.workdir and fresh.trained.model is not pg.trained.model
    assert len(list(pg.trained.workdir.glob("pg_posterior-*.safetensors"))) == 1
    np.testing.assert_array_equal(fresh.state.index, pg.state.index)
    assert torch.equal(fresh.state.w, pg.state.w)
    a, b = pg.predict(TEST), fresh.predict(TEST)
    np.testing.assert_array_equal(a.probs, b.probs)
    np.testing.assert_array_equal(a.samples, b.samples)


def test_pg_drr_trains_encoder_and_gp_layer_at_two_learning_rates(tmp_path, monkeypatch):
    seen = []
    adamw = torch.optim.AdamW

    def recording(groups, **kw):
        seen.append([(g.get("name"), g["lr"], len(g["params"])) for g in groups])
        return adamw(groups, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", recording)
    ranker = _make(PGDRRRanker, tmp_path, training=_training(epochs=1, lr=1e-4), gp_lr=7e-3, **PG_KW).fit(TRAIN)
    assert [(name, lr) for name, lr, _ in seen[0]] == [("encoder", 1e-4), ("gp", 7e-3)]
    model = ranker.trained.model
    head = model.head
    groups = pg_param_groups(model, 7e-3)
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == sum(1 for _ in model.parameters())
    # the mean function (constant and weights) at gp_lr; the projection trains with the encoder
    assert {id(p) for p in groups[1]["params"]} == {id(head.mean), id(head.mean_weight)}
    assert {id(p) for p in head.projection.parameters()} <= {id(p) for p in groups[0]["params"]}
    three = pg_param_groups(model, 7e-3, projection_lr=2e-4)
    assert [(g["name"], g.get("lr")) for g in three] == [("encoder", None), ("projection", 2e-4), ("gp", 7e-3)]
    assert {id(p) for p in three[1]["params"]} == {id(p) for p in head.projection.parameters()}


def test_pg_drr_linear_mean_function_is_trained_and_used_in_prediction(pg):
    """m(z) = m0 + v^T z: the Fisher loss sends a gradient to v, and the predictive mean carries m(x*)."""
    from calibrank.study.model.rankers.pg_gp import PGHead

    head = pg.trained.model.head
    assert head.mean_function == "linear" and head.mean_weight is not None
    from calibrank.study.model.rankers.pg_gp import PGHead as _Head

    assert not torch.equal(head.mean_weight.detach(), _Head(head.mean_weight.shape[0], seed=3).mean_weight.detach())
    z = torch.randn(5, head.mean_weight.shape[0], dtype=torch.float64)
    expected = float(head.mean.detach()) + z @ head.mean_weight.detach().double()
    torch.testing.assert_close(head.prior_mean(z).detach(), expected)
    model = pg.trained.model
    pairs = pg._encode(pg.trained.backbone.tokenizer, TEST[:2])
    model.train()
    try:
        model.zero_grad()
        pg.loss(model, collate(pairs, np.arange(8)), torch.as_tensor(pairs.labels)).backward()
    finally:
        model.eval()
    assert head.mean_weight.grad is not None and float(head.mean_weight.grad.abs().sum()) > 0
    # the constant mean is the old model: a zero-dimensional mean and no weight vector
    const = PGHead(4, mean_function="constant")
    assert const.mean_weight is None and torch.equal(
        const.prior_mean(torch.ones(3, 4)), torch.zeros(3, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="mean_function"):
        PGHead(4, mean_function="quadratic")


def test_pg_drr_single_pair_batch_gives_zero_loss(pg):
    model = pg.trained.model
    pairs = pg._encode(pg.trained.backbone.tokenizer, TEST[:1])
    model.train()
    try:
        one = pg.loss(model, collate(pairs, np.arange(1)), torch.as_tensor(pairs.labels[:1]))
        four = pg.loss(model, collate(pairs, np.arange(4)), torch.as_tensor(pairs.labels))
    finally:
        model.eval()
    assert float(one.detach()) == 0.0 and one.requires_grad
    assert math.isfinite(float(four.detach())) and four.requires_grad


# ----------------------------------------------------------------------------- parameter checks


@pytest.mark.parametrize(
    "cls, kw, error, match",
    [
        (SNGPRanker, dict(length_scale=-1.0), ValueError, r"sngp: length_scale: expected a positive number, got -1.0"),
        (SNGPRanker, dict(n_features=0), ValueError, "sngp: n_features: expected a positive integer, got 0"),
        (SNGPRanker, dict(n_features=1.5), ValueError, "sngp: n_features: expected an integer"),
        (
            SNGPRanker,
            dict(spectral_norm="some"),
            ValueError,
            "sngp: spectral_norm: expected one of 'pooler', 'none', 'all'",
        ),
        (SNGPRanker, dict(sn_bound=0.0), ValueError, "sngp: sn_bound"),
        (SNGPRanker, dict(sn_power_iterations=0), ValueError, "sngp: sn_power_iterations"),
        (SNGPRanker, dict(ridge=0.0), ValueError, "sngp: ridge"),
        (SNGPRanker, dict(momentum=1.0), ValueError, "sngp: momentum"),
        (SNGPRanker, dict(mean_field_factor=-0.1), ValueError, "sngp: mean_field_factor"),
        (SNGPRanker, dict(samples=0), ValueError, "sngp: samples"),
        (SNGPRanker, dict(loss="mse"), ValueError, "sngp: loss: expected one of 'bce', 'focal'"),
        (
            SNGPRanker,
            dict(loss="focal", focal_gamma=-1.0),
            ValueError,
            "sngp: focal_gamma: a focal-loss gamma must be >= 0",
        ),
        (SNGPRanker, dict(head_dropout=1.0), ValueError, "sngp: head_dropout"),
        (
            SNGPRanker,
            dict(output_init="normal"),
            ValueError,
            "sngp: output_init: expected one of 'dense', 'prior', 'zero'",
        ),
        (
            GPFBertRanker,
            dict(focal_gamma=-0.5),
            ValueError,
            r"gpf_bert: focal_gamma: a focal-loss gamma must be >= 0 \(or one of 'adaptive'\), got -0.5",
        ),
        (GPFBertRanker, dict(focal_gamma="adaptiv"), ValueError, "gpf_bert: focal_gamma: .*did you mean 'adaptive'"),
        (GPFBertRanker, dict(length_scale=0.0), ValueError, "gpf_bert: length_scale"),
        (GPFBertRanker, dict(loss="bce"), TypeError, "unexpected keyword argument .loss."),
        (FocalRanker, dict(gamma=-1), ValueError, "focal: gamma: a focal-loss gamma must be >= 0"),
        (PGDRRRanker, dict(mean_function="quadratic"), ValueError, "pg_drr: mean_function: expected one of"),
        (PGDRRRanker, dict(projection_lr=0.0), ValueError, "pg_drr: projection_lr: expected a positive number"),
        (PGDRRRanker, dict(length_scale=-1.0), ValueError, "pg_drr: length_scale: expected a positive number"),
        (PGDRRRanker, dict(output_scale=0.0), ValueError, "pg_drr: output_scale"),
        (PGDRRRanker, dict(kernel="poly"), ValueError, "pg_drr: kernel: expected one of 'rbf', 'matern', 'linear'"),
        (PGDRRRanker, dict(kernel="matern", nu=1.0), ValueError, r"pg_drr: nu: expected one of 0.5, 1.5, 2.5"),
        (PGDRRRanker, dict(gibbs_steps=0), ValueError, "pg_drr: gibbs_steps: expected a positive integer"),
        (PGDRRRanker, dict(gibbs_chains=0), ValueError, "pg_drr: gibbs_chains"),
        (PGDRRRanker, dict(gp_lr=0.0), ValueError, "pg_drr: gp_lr"),
        (PGDRRRanker, dict(inducing=1), ValueError, "pg_drr: inducing: expected at least 2 inducing pairs"),
        (PGDRRRanker, dict(samples=0), ValueError, "pg_drr: samples"),
        (PGDRRRanker, dict(projection="yes"), ValueError, "pg_drr: projection: expected true or false"),
        (
            PGDRRRanker,
            dict(training=tiny_training(batch_size=1)),
            ValueError,
            r"pg_drr: training.batch_size: .*too small for the GP\): expected at least 2",
        ),
        (PGDRRRanker, dict(n_features=8), TypeError, "n_features"),
    ],
)
def test_bad_parameters_name_the_parameter(tmp_path, cls, kw, error, match):
    run = RankerRun(kw.pop("training", tiny_training()), tmp_path)
    with pytest.raises(error, match=match):
        cls(run, **kw)


def test_predict_before_fit_is_an_error(tmp_path):
    for cls in (SNGPRanker, PGDRRRanker):
        with pytest.raises(RuntimeError, match="call fit"):
            cls(RankerRun(tiny_training(), tmp_path)).predict(TEST)


def test_defaults_are_the_config_sections(tmp_path):
    """A ranker built in code has its params section's defaults (one source for both)."""
    run = RankerRun(tiny_training(), tmp_path)
    sngp = SNGPRanker(run)
    assert sngp.settings == SNGPConfig()
    assert GPFBertRanker(run).settings == GPFBertConfig()
    assert PGDRRRanker(run).settings == PGDRRConfig()
    assert FocalRanker(run).gamma == SNGPConfig().focal_gamma
    model, _ = sngp._build(0)
    assert (
        model.head.n_features == SNGPConfig.n_features and model.head.mean_field_factor == SNGPConfig.mean_field_factor
    )
    assert model.dropout.p == SNGPConfig.head_dropout


def test_sngp_head_lr_defaults_to_the_training_rate(tmp_path):
    """``head_lr=None`` (default): the GP output layer trains at the encoder's ``training.lr``."""
    ranker = SNGPRanker(RankerRun(tiny_training(lr=2e-4), tmp_path))
    assert ranker._head_lr() == 2e-4 and ranker.params()["head_lr"] == 2e-4
    assert SNGPRanker(RankerRun(tiny_training(lr=2e-4), tmp_path), head_lr=1e-3)._head_lr() == 1e-3
    assert GPFBertRanker(RankerRun(tiny_training(lr=3e-5), tmp_path))._head_lr() == 3e-5
