"""Random-Fourier-feature GP layer with Laplace posterior (GPF-BERT eqs. 2-5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from calibrank.study.model.gp.random_features import RandomFeatureGP


def _inputs(n: int, d: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed)) * scale


def _set_beta(gp: RandomFeatureGP, seed: int, scale: float = 1.0) -> None:
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed)
        gp.output.weight.copy_(torch.randn(gp.output.weight.shape, generator=gen) * scale)


def test_random_features_approximate_rbf_kernel() -> None:
    x = _inputs(40, 5, seed=0, scale=0.6)
    ls = 1.5
    d2 = torch.cdist(x.double(), x.double()) ** 2
    k_true = torch.exp(-d2 / (2 * ls**2))
    errors = {}
    for n_features in (64, 4096):
        gp = RandomFeatureGP(5, n_features=n_features, length_scale=ls, seed=11)
        phi = gp.features(x).double()
        errors[n_features] = float((phi @ phi.t() - k_true).abs().max())
    assert errors[4096] < 0.08
    assert errors[4096] < errors[64] / 3
    # feature_scale multiplies Phi: the kernel's output scale is its square
    gp = RandomFeatureGP(5, n_features=4096, length_scale=ls, feature_scale=2.0, seed=11)
    phi = gp.features(x).double()
    assert float((phi @ phi.t() - 4.0 * k_true).abs().max()) < 4 * 0.08


def test_laplace_covariance_equals_inverse_hessian() -> None:
    L, d, ridge = 16, 3, 0.5
    gp = RandomFeatureGP(d, n_features=L, ridge=ridge, seed=2)
    _set_beta(gp, seed=3, scale=2.0)
    gp.train()
    batches = [_inputs(20, d, seed=10), _inputs(13, d, seed=11)]
    phis, logits_all = [], []
    for h in batches:
        logits, phi = gp(h, return_features=True)
        gp.update_precision(phi, logits)
        phis.append(phi.detach().double().numpy())
        logits_all.append(logits.detach().double().numpy())
    phi_np = np.concatenate(phis)
    p = 1.0 / (1.0 + np.exp(-np.concatenate(logits_all)))
    hessian = ridge * np.eye(L) + (phi_np * (p * (1 - p))[:, None]).T @ phi_np
    np.testing.assert_allclose(gp.precision.numpy(), hessian, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gp.covariance().numpy(), np.linalg.inv(hessian), rtol=1e-8, atol=1e-10)
    assert float(gp.n_seen) == 33
    # reset: back to the ridge
    gp.reset_precision()
    np.testing.assert_allclose(gp.covariance().numpy(), np.eye(L) / ridge)


def test_momentum_update_keeps_ridge() -> None:
    L, d, ridge, m = 8, 2, 0.1, 0.9
    gp = RandomFeatureGP(d, n_features=L, ridge=ridge, momentum=m, seed=4, output_init="zero")
    gp.train()
    h = _inputs(10, d, seed=5)
    logits, phi = gp(h, return_features=True)
    phi_np = phi.detach().double().numpy()
    batch = 0.25 * phi_np.T @ phi_np  # beta = 0: p = 1/2
    gp.update_precision(phi, logits)
    gp.update_precision(phi, logits)
    data = (1 - m) * batch
    data = m * data + (1 - m) * batch
    np.testing.assert_allclose(gp.precision.numpy(), ridge * np.eye(L) + data, rtol=1e-10)


def test_evaluation_never_updates_precision() -> None:
    gp = RandomFeatureGP(4, n_features=32, seed=0)
    _set_beta(gp, 1)
    gp.train()
    logits, phi = gp(_inputs(25, 4, seed=1), return_features=True)
    gp.update_precision(phi, logits)
    before = gp.precision.clone()
    h = _inputs(6, 4, seed=2)
    gp(h)  # training-mode forward alone does not update either
    assert torch.equal(gp.precision, before)
    gp.eval()
    for ctx in (torch.enable_grad, torch.no_grad):
        with ctx():
            gp(h)
            gp.predictive(h)
            gp.predictive_joint(h)
            gp.mean_field_logits(h)
            gp.sample_logits(h, 5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(gp.precision, before)
    with pytest.raises(RuntimeError, match="eval"):
        gp.update_precision(phi, logits)
    assert torch.equal(gp.precision, before)


def test_variance_grows_far_from_training_data() -> None:
    d = 3
    gp = RandomFeatureGP(d, n_features=256, ridge=1.0, seed=7)
    gp.train()
    train = _inputs(400, d, seed=8, scale=0.5)
    logits, phi = gp(train, return_features=True)
    gp.update_precision(phi, logits)
    gp.eval()
    near = _inputs(20, d, seed=9, scale=0.5)
    far = near + 25.0
    _, var_near = gp.predictive(near)
    _, var_far = gp.predictive(far)
    assert float(var_near.max()) < 0.5 * float(var_far.min())
    assert float(var_near.mean()) < 0.2 * float(var_far.mean())
    # far away the posterior is the prior: ||Phi||^2 / ridge ~= feature_scale^2 = 1
    assert float(var_far.mean()) == pytest.approx(1.0, abs=0.2)


def test_mean_field_logits_shrink_with_variance() -> None:
    d = 3
    gp = RandomFeatureGP(d, n_features=128, ridge=1e-2, seed=1)
    _set_beta(gp, 2, scale=3.0)
    h = _inputs(10, d, seed=3, scale=0.5)
    gp.eval()
    mean, var_prior = gp.predictive(h)
    mf_prior = gp.mean_field_logits(h)
    torch.testing.assert_close(mf_prior, mean / torch.sqrt(1 + math.pi / 8 * var_prior))
    gp.train()
    logits, phi = gp(_inputs(500, d, seed=4, scale=0.5), return_features=True)
    gp.update_precision(phi, logits)
    gp.eval()
    _, var_post = gp.predictive(h)
    mf_post = gp.mean_field_logits(h)
    assert bool((var_post < var_prior).all())
    assert bool((mf_prior.abs() < mf_post.abs()).all())
    assert bool((mf_post.abs() <= mean.abs() + 1e-6).all())
    # huge variance: logits close to 0
    assert float(mf_prior.detach().abs().max()) < 0.2 * float(mean.detach().abs().max())


def test_sample_logits_match_predictive_joint() -> None:
    d = 2
    gp = RandomFeatureGP(d, n_features=64, ridge=1.0, seed=5)
    _set_beta(gp, 6)
    gp.train()
    logits, phi = gp(_inputs(30, d, seed=7), return_features=True)
    gp.update_precision(phi, logits)
    gp.eval()
    h = _inputs(4, d, seed=8)
    mean, cov = gp.predictive_joint(h)
    mean = mean.detach()
    draws = gp.sample_logits(h, 40000, generator=torch.Generator().manual_seed(0))
    assert draws.shape == (40000, 4)
    emp_mean = draws.double().mean(0)
    emp_cov = torch.cov(draws.double().t())
    sd = torch.sqrt(cov.double().diagonal())
    assert float(((emp_mean - mean.double()).abs() / sd).max()) < 0.03
    torch.testing.assert_close(emp_cov, cov.double(), rtol=0.05, atol=0.03 * float(sd.max()) ** 2)
    # predictive_joint's diagonal is predictive's variance
    torch.testing.assert_close(cov.diagonal(), gp.predictive(h)[1])
    again = gp.sample_logits(h, 40000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again, draws)  # the generator argument fixes the draws


def test_covariance_cache_invalidated_on_update_and_load() -> None:
    gp = RandomFeatureGP(2, n_features=8, seed=0)
    gp.train()
    c0 = gp.covariance().clone()
    logits, phi = gp(_inputs(10, 2, seed=1), return_features=True)
    gp.update_precision(phi, logits)
    c1 = gp.covariance().clone()
    assert not torch.allclose(c0, c1)
    fresh = RandomFeatureGP(2, n_features=8, seed=0)
    fresh.covariance()
    fresh.load_state_dict(gp.state_dict())
    torch.testing.assert_close(fresh.covariance(), c1)


def test_seeded_features_are_reproducible() -> None:
    a = RandomFeatureGP(3, n_features=16, seed=42)
    b = RandomFeatureGP(3, n_features=16, seed=42)
    c = RandomFeatureGP(3, n_features=16, seed=43)
    h = _inputs(5, 3, seed=0)
    assert torch.equal(a.features(h), b.features(h))
    assert not torch.equal(a.features(h), c.features(h))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"n_features": 0}, "n_features: expected a positive integer"),
        ({"length_scale": 0.0}, "length_scale"),
        ({"length_scale": -1.0}, "length_scale"),
        ({"ridge": 0.0}, "ridge"),
        ({"momentum": 0.0}, "momentum"),
        ({"momentum": 1.0}, "momentum"),
        ({"momentum": 1.5}, "momentum"),
        ({"feature_scale": 0.0}, "feature_scale"),
        ({"mean_field_factor": -0.1}, "mean_field_factor"),
    ],
)
def test_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RandomFeatureGP(3, **kwargs)


def test_input_validation() -> None:
    gp = RandomFeatureGP(3, n_features=8)
    bad = torch.zeros(2, 3)
    bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite features into the GP layer"):
        gp(bad)
    bad[1, 0] = float("inf")
    with pytest.raises(ValueError, match="non-finite features into the GP layer"):
        gp.predictive(bad)
    with pytest.raises(ValueError, match="in_features"):
        gp(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="n_samples"):
        gp.sample_logits(torch.zeros(2, 3), 0, generator=torch.Generator())


def test_gradients_reach_features_and_beta() -> None:
    gp = RandomFeatureGP(3, n_features=16, seed=0)
    _set_beta(gp, 1)
    h = _inputs(4, 3, seed=2).requires_grad_(True)
    gp.mean_field_logits(h).sum().backward()
    assert h.grad is not None and torch.isfinite(h.grad).all() and h.grad.abs().sum() > 0
    assert gp.output.weight.grad is not None and gp.output.weight.grad.abs().sum() > 0


def _variance_after(n_batches: int, momentum: float | None) -> float:
    """Mean predictive variance at test points after ``n_batches`` batches of 24 training points."""
    gp = RandomFeatureGP(4, n_features=64, ridge=1.0, momentum=momentum, seed=7, output_init="zero")
    gp.train()
    for i in range(n_batches):
        logits, phi = gp(_inputs(24, 4, seed=100 + i), return_features=True)
        gp.update_precision(phi, logits)
    gp.eval()
    phi_test = gp.features(_inputs(50, 4, seed=999)).double()
    return float(torch.einsum("nl,lk,nk->n", phi_test, gp.covariance(), phi_test).mean())


def test_exact_precision_shrinks_the_variance_as_data_grows_and_eq5_does_not() -> None:
    exact = [_variance_after(n, None) for n in (10, 40, 160)]
    assert exact[0] > 2 * exact[1] > 4 * exact[2]  # ~1/n: the Laplace posterior of eq. 4
    moving = [_variance_after(n, 0.999) for n in (10, 40, 160)]
    # eq. 5 with m = 0.999 averages per-batch terms: its precision stays below one batch's worth of
    # data, so the variance barely moves with 16x the data, and stays far above the exact one
    assert moving[2] > 0.8 * moving[0] and moving[2] > 10 * exact[2]


def test_the_sngp_sections_read_the_layers_defaults() -> None:
    """Every argument of the layer that a profile sets defaults to the same value in both."""
    import inspect

    from calibrank.study.settings.schema import GPFBertConfig, SNGPConfig

    params = inspect.signature(RandomFeatureGP).parameters
    names = ("n_features", "length_scale", "feature_scale", "ridge", "momentum", "mean_field_factor", "output_init")
    layer = {n: params[n].default for n in names}
    assert layer["mean_field_factor"] == math.pi / 8 and layer["momentum"] is None and layer["output_init"] == "dense"
    for section in (SNGPConfig(), GPFBertConfig()):
        assert {n: getattr(section, n) for n in names} == layer


def test_the_settings_check_themselves_where_they_are_built() -> None:
    from calibrank.study.settings.checks import ConfigError
    from calibrank.study.settings.choices import RFOutputInit
    from calibrank.study.settings.gp import MAX_FEATURES, RandomFeatureSettings

    assert RandomFeatureSettings(output_init="prior").output_init is RFOutputInit.prior
    with pytest.raises(ConfigError, match=rf"^n_features: expected at most {MAX_FEATURES} "):
        RandomFeatureSettings(n_features=MAX_FEATURES + 1)
    with pytest.raises(
        ConfigError,
        match=r"^output_init: expected one of 'dense', 'prior', 'zero', got 'priors' "
        r"\(did you mean 'prior'\?\)$",
    ):
        RandomFeatureSettings(output_init="priors")
    with pytest.raises(ConfigError, match=r"^momentum: expected null \(exact sum\) or a number in \(0, 1\), got 1$"):
        RandomFeatureGP(3, n_features=4, momentum=1)
