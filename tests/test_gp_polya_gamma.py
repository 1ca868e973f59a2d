"""Pólya-Gamma GP layer (PG-DRR eqs. 4-15, Algorithm 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate

import oracles
from calibrank.study.model.gp.gaussian import draw_joint, jittered_cholesky
from calibrank.study.model.gp.polya_gamma import (
    PGPosterior,
    fisher_loss,
    gauss_hermite_sigmoid,
    gibbs_gp,
    linear_kernel,
    log_likelihood_given_w,
    matern_kernel,
    rbf_kernel,
    sample_pg,
    select_inducing,
)

D64 = torch.float64


def _pg_var(c: float) -> float:
    """Var[PG(1, c)] = (sinh c - c) / (4 c^3 cosh^2(c/2)), limit 1/24 at 0."""
    if abs(c) < 1e-3:
        return 1.0 / 24.0
    return (math.sinh(c) - c) / (4 * c**3 * math.cosh(c / 2) ** 2)


# ---------------------------------------------------------------- Pólya-Gamma draws
@pytest.mark.parametrize("c", [0.0, 0.5, -2.0, 10.0, 50.0])
def test_sampler_mean_matches_closed_form(c: float) -> None:
    n = 100_000
    draws = sample_pg(np.full(n, c), np.random.default_rng(123))
    se = math.sqrt(_pg_var(c) / n)
    assert draws.shape == (n,)
    assert bool((draws > 0).all())
    assert abs(draws.mean() - float(oracles.pg_mean(c))) < 4.5 * se


def test_the_pg_mean_oracle_has_its_limits() -> None:
    assert float(oracles.pg_mean(0.0)) == 0.25
    c = np.array([-1e-4 * 0.999, 1e-4 * 1.001, 1e-3])
    np.testing.assert_allclose(oracles.pg_mean(c), np.tanh(c / 2) / (2 * c), rtol=1e-10)
    assert float(oracles.pg_mean(200.0)) == pytest.approx(1 / 400, rel=1e-12)
    assert float(oracles.pg_mean(-3.0)) == float(oracles.pg_mean(3.0))


def test_sample_pg_shape_seed_and_errors() -> None:
    c = np.arange(6.0).reshape(2, 3)
    a = sample_pg(c, np.random.default_rng(0))
    b = sample_pg(c, np.random.default_rng(0))
    assert a.shape == (2, 3) and np.array_equal(a, b)
    with pytest.raises(ValueError, match="h must be"):
        sample_pg(c, np.random.default_rng(0), h=0.0)
    with pytest.raises(ValueError, match="finite"):
        sample_pg(np.array([np.nan]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        sample_pg(c, 0)  # type: ignore[arg-type]


# ---------------------------------------------------------------- kernels
def _x(n: int = 7, d: int = 3, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=D64)


def test_rbf_kernel_formula_scale_and_psd() -> None:
    x, z = _x(), _x(4, seed=1)
    k = rbf_kernel(x, z, length_scale=0.7, output_scale=8.0)
    ref = 8.0 * torch.exp(-(torch.cdist(x, z) ** 2) / (2 * 0.7**2))
    torch.testing.assert_close(k, ref)
    kxx = rbf_kernel(x, x)
    assert torch.equal(kxx.diagonal(), torch.full((7,), 8.0, dtype=D64))
    assert float(torch.linalg.eigvalsh(kxx)[0]) > -1e-10 * 8


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_kernel_scale_psd_and_formula(nu: float) -> None:
    x = _x()
    k = matern_kernel(x, x, nu=nu, length_scale=1.3, output_scale=2.0)
    assert torch.equal(k.diagonal(), torch.full((7,), 2.0, dtype=D64))
    assert float(torch.linalg.eigvalsh(k)[0]) > -1e-10
    r = float(torch.linalg.norm(x[0] - x[1])) / 1.3
    expected = {
        0.5: math.exp(-r),
        1.5: (1 + math.sqrt(3) * r) * math.exp(-math.sqrt(3) * r),
        2.5: (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r),
    }[nu]
    assert float(k[0, 1]) == pytest.approx(2.0 * expected, rel=1e-10)
    # finite gradient at zero distance (diagonal)
    xg = x.clone().requires_grad_(True)
    matern_kernel(xg, xg, nu=nu).sum().backward()
    assert torch.isfinite(xg.grad).all()


def test_linear_kernel_scale_and_psd() -> None:
    x = _x()
    k = linear_kernel(x, x, length_scale=2.0, output_scale=3.0)
    torch.testing.assert_close(k.diagonal(), 3.0 * (x / 2.0).pow(2).sum(-1))
    assert float(torch.linalg.eigvalsh(k)[0]) > -1e-10


@pytest.mark.parametrize("kernel", [rbf_kernel, linear_kernel, matern_kernel])
def test_kernel_validation(kernel) -> None:
    x = _x()
    with pytest.raises(ValueError, match="length_scale"):
        kernel(x, x, length_scale=-1.0)
    with pytest.raises(ValueError, match="output_scale"):
        kernel(x, x, output_scale=0.0)
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite features"):
        kernel(bad, x)
    with pytest.raises(ValueError, match="nu"):
        matern_kernel(x, x, nu=1.0)


def test_kernel_hyperparameters_can_be_learnable() -> None:
    x = _x()
    log_ls = torch.tensor(0.1, dtype=D64, requires_grad=True)
    out = torch.tensor(8.0, dtype=D64, requires_grad=True)
    rbf_kernel(x, x, length_scale=log_ls.exp(), output_scale=out).sum().backward()
    assert log_ls.grad is not None and out.grad is not None


# ---------------------------------------------------------------- jitter
def test_jitter_escalation_on_rank_deficient_kernel() -> None:
    x = _x(6, 2)
    k = linear_kernel(x, x, output_scale=1.0)  # rank 2 < 6
    assert int(torch.linalg.cholesky_ex(k)[1]) != 0
    chol, jitter = jittered_cholesky(k)
    assert jitter > 0
    scale = float(k.diagonal().mean())
    assert jitter <= 1e-2 * scale
    torch.testing.assert_close(chol @ chol.t(), k + jitter * torch.eye(6, dtype=D64))
    res = gibbs_gp(k, torch.tensor([1, 0, 1, 0, 0, 1]), 0.0, n_steps=3, n_chains=5, rng=np.random.default_rng(0))
    assert res.jitter == jitter
    assert torch.isfinite(res.g).all() and torch.isfinite(res.w).all()


def test_negative_eigenvalue_kernel_is_a_clear_error() -> None:
    q, _ = torch.linalg.qr(_x(3, 3))
    k = q @ torch.diag(torch.tensor([2.0, 1.0, -0.5], dtype=D64)) @ q.t()
    with pytest.raises(ValueError, match=r"kernel matrix K is not positive semi-definite.*-0\.5"):
        jittered_cholesky(k)
    with pytest.raises(ValueError, match="kernel matrix K"):
        gibbs_gp(k, torch.tensor([1, 0, 1]), 0.0, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- Gibbs sampler
X_TINY = torch.tensor([[-1.0], [-0.3], [0.4], [1.5]], dtype=D64)
Y_TINY = torch.tensor([1.0, 0.0, 1.0, 1.0])
MU_TINY = torch.tensor([0.3, -0.2, 0.0, 0.5], dtype=D64)


@pytest.fixture(scope="module")
def reference_posterior() -> dict[str, np.ndarray]:
    """Self-normalised importance sampling from the GP prior with the Bernoulli likelihood."""
    k = rbf_kernel(X_TINY, X_TINY, 1.0, 8.0).numpy()
    rng = np.random.default_rng(2024)
    g = MU_TINY.numpy() + rng.standard_normal((200_000, 4)) @ np.linalg.cholesky(k).T
    y = Y_TINY.numpy()
    logw = (y * g - np.logaddexp(0.0, g)).sum(1)
    wt = np.exp(logw - logw.max())
    wt /= wt.sum()
    mean = wt @ g
    sd = np.sqrt(wt @ (g - mean) ** 2)
    ess = 1.0 / (wt**2).sum()
    r = g - MU_TINY.numpy()
    second = (r * wt[:, None]).T @ r  # E[(g - mu)(g - mu)^T | y]
    return {"mean": mean, "sd": sd, "se": sd / math.sqrt(ess), "K": k, "second": second}


@pytest.fixture(scope="module")
def long_gibbs_run() -> tuple:
    k = rbf_kernel(X_TINY, X_TINY, 1.0, 8.0)
    return k, gibbs_gp(k, Y_TINY, MU_TINY, n_steps=25, n_chains=3000, rng=np.random.default_rng(7))


def test_gibbs_recovers_reference_posterior(reference_posterior, long_gibbs_run) -> None:
    _, res = long_gibbs_run
    g = res.g.numpy()
    assert g.shape == (3000, 4) and res.w.shape == (3000, 4)
    se = np.sqrt(g.var(0) / g.shape[0] + reference_posterior["se"] ** 2)
    assert np.all(np.abs(g.mean(0) - reference_posterior["mean"]) < 4.5 * se)
    np.testing.assert_allclose(g.std(0), reference_posterior["sd"], rtol=0.08)


def test_gibbs_is_seeded_and_validates() -> None:
    k = rbf_kernel(X_TINY, X_TINY)
    a = gibbs_gp(k, Y_TINY, MU_TINY, n_steps=2, n_chains=3, rng=np.random.default_rng(1))
    b = gibbs_gp(k, Y_TINY, MU_TINY, n_steps=2, n_chains=3, rng=np.random.default_rng(1))
    assert torch.equal(a.g, b.g) and torch.equal(a.w, b.w)
    init = gibbs_gp(
        k, Y_TINY, MU_TINY, n_steps=1, n_chains=3, rng=np.random.default_rng(1), init=torch.zeros(4, dtype=D64)
    )
    assert init.g.shape == (3, 4)
    with pytest.raises(ValueError, match="too small"):
        gibbs_gp(k[:1, :1], Y_TINY[:1], 0.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="0 and 1"):
        gibbs_gp(k, torch.tensor([1.0, 2.0, 0.0, 0.0]), 0.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="mu"):
        gibbs_gp(k, Y_TINY, torch.zeros(3), rng=np.random.default_rng(0))
    bad = k.clone()
    bad[0, 1] = bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        gibbs_gp(bad, Y_TINY, 0.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_steps"):
        gibbs_gp(k, Y_TINY, 0.0, n_steps=0, rng=np.random.default_rng(0))


def test_uninformative_data_leaves_prior_mean() -> None:
    # each location labelled once relevant and once not: kappa is antisymmetric and the
    # posterior is symmetric about the prior mean 0 (duplicates also make K singular)
    x = torch.tensor([[0.0], [0.0], [2.0], [2.0]], dtype=D64)
    k = rbf_kernel(x, x)
    res = gibbs_gp(k, torch.tensor([1, 0, 1, 0]), 0.0, n_steps=15, n_chains=2000, rng=np.random.default_rng(3))
    g = res.g.numpy()
    assert np.all(np.abs(g.mean(0)) < 4.5 * g.std(0) / math.sqrt(g.shape[0]))


# ---------------------------------------------------------------- Fisher-identity objective
def test_log_likelihood_given_w_matches_quadrature() -> None:
    w = torch.tensor([[0.7, 1.9]], dtype=D64)
    mu = torch.tensor([0.4, -1.0], dtype=D64)
    y = torch.tensor([0, 1])
    kappa = y.numpy() - 0.5
    wn = w.numpy()[0]
    # correlated 2 x 2 kernel: 2-D quadrature of prod_i 1/2 exp(kappa g - w g^2 / 2) N(g; mu, K)
    k = np.array([[2.0, 0.8], [0.8, 1.5]])
    kinv, det = np.linalg.inv(k), np.linalg.det(k)

    def integrand(g2: float, g1: float) -> float:
        g = np.array([g1, g2])
        r = g - mu.numpy()
        prior = math.exp(-0.5 * r @ kinv @ r) / (2 * math.pi * math.sqrt(det))
        return 0.25 * math.exp(kappa @ g - 0.5 * (wn * g * g).sum()) * prior

    ref = math.log(integrate.dblquad(integrand, -15, 15, -15, 15, epsabs=1e-13)[0])
    val = log_likelihood_given_w(torch.tensor(k), mu, y, w)
    assert float(val[0]) == pytest.approx(ref, abs=1e-6)


def test_fisher_identity_gradient(reference_posterior, long_gibbs_run) -> None:
    # grad_mu log p(y | x) = K^-1 (E[g | y] - mu); Fisher: average over chains of grad log p(y | x, w)
    k, res = long_gibbs_run
    mu = MU_TINY.clone().requires_grad_(True)
    fisher_loss(k, mu, Y_TINY, res.w, reduction="sum").backward()
    ref = np.linalg.solve(reference_posterior["K"], reference_posterior["mean"] - MU_TINY.numpy())
    np.testing.assert_allclose(-mu.grad.numpy(), ref, atol=0.03)


def test_fisher_identity_gradient_to_kernel_scale(reference_posterior, long_gibbs_run) -> None:
    # K = s K0: d/ds log p(y | x) = 1/2 tr(K^-1 (E[r r^T | y] K^-1 - I) K0), r = g - mu
    _, res = long_gibbs_run
    scale = torch.tensor(8.0, dtype=D64, requires_grad=True)
    k = rbf_kernel(X_TINY, X_TINY, 1.0, scale)
    fisher_loss(k, MU_TINY, Y_TINY, res.w, reduction="sum").backward()
    kn = reference_posterior["K"]
    kinv = np.linalg.inv(kn)
    ref = 0.5 * np.trace(kinv @ (reference_posterior["second"] @ kinv - np.eye(4)) @ (kn / 8.0))
    assert -float(scale.grad) == pytest.approx(ref, abs=0.01 + 0.1 * abs(ref))


def test_fisher_loss_gradients_flow_to_features_and_mean() -> None:
    h = _x(5, 4, seed=2).float().requires_grad_(True)
    mean_w = torch.zeros(4, requires_grad=True)
    y = torch.tensor([1, 0, 0, 1, 0])
    k = rbf_kernel(h, h, 1.0, 8.0)
    mu = h @ mean_w
    res = gibbs_gp(k, y, mu, rng=np.random.default_rng(0))
    w = res.w.clone().requires_grad_(True)
    loss = fisher_loss(k, mu, y, w)
    assert loss.dtype == torch.float32 and loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert h.grad is not None and torch.isfinite(h.grad).all() and h.grad.abs().sum() > 0
    assert mean_w.grad is not None and torch.isfinite(mean_w.grad).all() and mean_w.grad.abs().sum() > 0
    assert w.grad is None  # w is detached inside
    per_chain = fisher_loss(k.detach(), mu.detach(), y, res.w, reduction="none")
    assert per_chain.shape == (30,)
    assert float(loss.detach()) == pytest.approx(float(per_chain.mean()) / 5, rel=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        fisher_loss(k, mu, y, res.w, reduction="max")  # type: ignore[arg-type]


# ---------------------------------------------------------------- prediction (eq. 14)
def _eq14_numpy(k_tr, k_x, k_tt, w, y, mu_tr, mu_te):
    winv = np.diag(1.0 / w)
    a = np.linalg.inv(k_tr + winv)
    mean = mu_te + k_x.T @ a @ (winv @ (y - 0.5) - mu_tr)
    cov = k_tt - k_x.T @ a @ k_x
    return mean, cov


def test_predictive_matches_equation_14() -> None:
    x_tr, x_te = _x(6, 2, seed=4), _x(3, 2, seed=5)
    k_tr, k_x, k_tt = rbf_kernel(x_tr, x_tr), rbf_kernel(x_tr, x_te), rbf_kernel(x_te, x_te)
    y = torch.tensor([1, 0, 0, 1, 1, 0])
    w = torch.from_numpy(sample_pg(np.zeros((1, 6)) + 0.5, np.random.default_rng(0)))
    mu_tr, mu_te = torch.linspace(-1, 1, 6, dtype=D64), torch.tensor([0.2, 0.0, -0.3], dtype=D64)
    mean, cov = PGPosterior.from_w(k_tr, w, y, mu_tr).predictive_joint(k_x, k_tt, mu_te)
    ref_mean, ref_cov = _eq14_numpy(
        k_tr.numpy(), k_x.numpy(), k_tt.numpy(), w.numpy()[0], y.numpy(), mu_tr.numpy(), mu_te.numpy()
    )
    np.testing.assert_allclose(mean.numpy(), ref_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cov.numpy(), ref_cov, rtol=1e-8, atol=1e-9)
    m2, v2 = PGPosterior.from_w(k_tr, w, y, mu_tr).predictive(k_x, k_tt.diagonal(), mu_te)
    np.testing.assert_allclose(v2.numpy(), np.diag(ref_cov), rtol=1e-8, atol=1e-9)
    torch.testing.assert_close(m2, mean)


def test_predictive_at_training_points_is_gibbs_conditional() -> None:
    # with K_cross = K the predictive equals g | w: mean Sigma (K^-1 mu + kappa), cov Sigma
    x = _x(5, 2, seed=6)
    k = rbf_kernel(x, x)
    y = torch.tensor([1, 0, 1, 0, 0])
    mu = torch.tensor([0.5, 0.1, -0.2, 0.0, 0.3], dtype=D64)
    w = torch.tensor([[0.3, 0.2, 0.25, 0.1, 0.22]], dtype=D64)
    mean, cov = PGPosterior.from_w(k, w, y, mu).predictive_joint(k, k, mu)
    kn = k.numpy()
    sigma = np.linalg.inv(np.linalg.inv(kn) + np.diag(w.numpy()[0]))
    np.testing.assert_allclose(cov.numpy(), sigma, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(
        mean.numpy(), sigma @ (np.linalg.solve(kn, mu.numpy()) + y.numpy() - 0.5), rtol=1e-7, atol=1e-8
    )


def test_chains_are_moment_matched() -> None:
    x_tr, x_te = _x(5, 2, seed=7), _x(4, 2, seed=8)
    k_tr, k_x, k_tt = rbf_kernel(x_tr, x_tr), rbf_kernel(x_tr, x_te), rbf_kernel(x_te, x_te)
    y = torch.tensor([1, 0, 0, 1, 0])
    res = gibbs_gp(k_tr, y, 0.0, n_chains=30, rng=np.random.default_rng(1))
    post = PGPosterior.from_w(k_tr, res.w, y)
    assert post.n_chains == 30
    mc, vc = post.predictive(k_x, k_tt.diagonal(), per_chain=True)
    assert mc.shape == (30, 4)
    # conditioning on 5 training points lowers every chain's variance below the prior's (8) but not to 0
    assert bool(((vc > 1e-6) & (vc < k_tt.diagonal())).all())
    m, v = post.predictive(k_x, k_tt.diagonal())
    torch.testing.assert_close(m, mc.mean(0))
    torch.testing.assert_close(v, vc.mean(0) + mc.var(0, unbiased=False))
    mj, cj = post.predictive_joint(k_x, k_tt)
    torch.testing.assert_close(mj, m)
    torch.testing.assert_close(cj.diagonal(), v)
    assert float(torch.linalg.eigvalsh(cj)[0]) > -1e-9
    # far from the conditioning set the predictive falls back to the prior
    far = x_te + 50.0
    mf, vf = post.predictive(rbf_kernel(x_tr, far), torch.full((4,), 8.0, dtype=D64))
    torch.testing.assert_close(mf, torch.zeros(4, dtype=D64), atol=1e-12, rtol=0)
    torch.testing.assert_close(vf, torch.full((4,), 8.0, dtype=D64))


# ---------------------------------------------------------------- Gauss-Hermite (eq. 15)
def test_gauss_hermite_matches_monte_carlo_and_quadrature() -> None:
    mean = torch.tensor([-2.0, 0.0, 0.7, 3.0], dtype=D64)
    var = torch.tensor([0.5, 4.0, 1.0, 8.0], dtype=D64)
    gh = gauss_hermite_sigmoid(mean, var)
    rng = np.random.default_rng(0)
    f = mean.numpy() + np.sqrt(var.numpy()) * rng.standard_normal((1_000_000, 4))
    mc = (1 / (1 + np.exp(-f))).mean(0)
    np.testing.assert_allclose(gh.numpy(), mc, atol=2e-3)
    for m, v, p in zip(mean.tolist(), var.tolist(), gh.tolist()):
        ref = integrate.quad(
            lambda t: math.exp(-((t - m) ** 2) / (2 * v)) / math.sqrt(2 * math.pi * v) / (1 + math.exp(-t)), -60, 60
        )[0]
        assert p == pytest.approx(ref, abs=1e-4 if v > 4 else 1e-6)


def test_gauss_hermite_zero_variance_is_sigmoid() -> None:
    mean = np.array([-4.0, -0.3, 0.0, 2.5])
    out = gauss_hermite_sigmoid(mean, np.zeros(4))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-mean)), rtol=1e-12)
    out = gauss_hermite_sigmoid(torch.tensor(mean, dtype=torch.float32), torch.full((4,), 1e-12))
    assert out.dtype == torch.float32
    with pytest.raises(ValueError, match="var"):
        gauss_hermite_sigmoid(mean, -np.ones(4))
    with pytest.raises(ValueError, match="n_points"):
        gauss_hermite_sigmoid(mean, np.zeros(4), n_points=0)


# ---------------------------------------------------------------- joint samples, inducing set
def test_draw_joint_matches_moments() -> None:
    mean = torch.tensor([0.5, -1.0, 2.0], dtype=D64)
    a = _x(3, 3, seed=9)
    cov = a @ a.t() + 0.1 * torch.eye(3, dtype=D64)
    draws = draw_joint(mean, cov, 50_000, rng=np.random.default_rng(0))
    assert draws.shape == (50_000, 3)
    torch.testing.assert_close(draws.mean(0), mean, atol=0.05, rtol=0)
    torch.testing.assert_close(torch.cov(draws.t()), cov, rtol=0.05, atol=0.05)


def test_select_inducing_is_stratified_and_seeded() -> None:
    labels = np.array([1] + [0] * 9).repeat(20)  # 1:9
    idx = select_inducing(labels, 50, np.random.default_rng(0))
    assert idx.shape == (50,) and len(set(idx.tolist())) == 50
    assert int(labels[idx].sum()) == 5
    assert np.array_equal(idx, select_inducing(labels, 50, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="size"):
        select_inducing(labels, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="size"):
        select_inducing(labels, 10_000, np.random.default_rng(0))


def test_the_pg_drr_section_reads_the_layers_defaults() -> None:
    """PG-DRR's settings (sec. 4.4) are the functions' defaults, and the ``pg_drr`` section of a profile reads them."""
    import inspect

    from calibrank.study.settings.checks import ConfigError
    from calibrank.study.settings.gp import PolyaGammaSettings
    from calibrank.study.settings.schema import PGDRRConfig

    def default(fn, name):
        return inspect.signature(fn).parameters[name].default

    section = PGDRRConfig()
    assert (section.length_scale, section.output_scale) == (1.0, 8.0)
    for kernel in (rbf_kernel, matern_kernel, linear_kernel):
        assert default(kernel, "length_scale") == section.length_scale
        assert default(kernel, "output_scale") == section.output_scale
    assert default(matern_kernel, "nu") == section.nu == 2.5
    assert (default(gibbs_gp, "n_steps"), default(gibbs_gp, "n_chains")) == (section.gibbs_steps, section.gibbs_chains)
    assert (section.gibbs_steps, section.gibbs_chains) == (10, 30)
    assert default(gauss_hermite_sigmoid, "n_points") == section.quadrature_points == 20
    with pytest.raises(ConfigError, match=r"^nu: expected one of 0.5, 1.5, 2.5 \(Matérn smoothness\), got 2.0$"):
        PolyaGammaSettings(nu=2.0)
