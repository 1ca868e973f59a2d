"""Spectral normalisation with a bound (GPF-BERT eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from calibrank.study.model.gp.spectral import SpectralNormLinear


def _linear_with_singular_values(s: list[float], out_f: int = 12, in_f: int = 20, seed: int = 0) -> nn.Linear:
    gen = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(out_f, out_f, generator=gen, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(in_f, in_f, generator=gen, dtype=torch.float64))
    sv = torch.zeros(out_f, in_f, dtype=torch.float64)
    sv[range(len(s)), range(len(s))] = torch.tensor(s, dtype=torch.float64)
    lin = nn.Linear(in_f, out_f)
    with torch.no_grad():
        lin.weight.copy_((u @ sv @ v.t()).float())
        lin.bias.copy_(torch.randn(out_f, generator=gen))
    return lin


def _top_sv(w: torch.Tensor) -> float:
    return float(np.linalg.svd(w.detach().double().numpy(), compute_uv=False)[0])


@pytest.mark.parametrize("n_iter,n_calls", [(1, 60), (50, 1)])
def test_effective_norm_matches_svd_bound(n_iter: int, n_calls: int) -> None:
    s = [3.0, 2.0] + [1.0] * 10
    sn = SpectralNormLinear(_linear_with_singular_values(s), bound=0.95, n_power_iterations=n_iter, seed=1)
    sn.train()
    x = torch.randn(4, 20)
    for _ in range(n_calls):
        sn(x)
    assert _top_sv(sn.linear.weight) == pytest.approx(3.0, rel=1e-5)  # raw weight untouched
    assert _top_sv(sn.weight) == pytest.approx(min(3.0, 0.95), abs=1e-3)
    assert float(sn.sigma().detach()) == pytest.approx(3.0, abs=1e-3)


def test_random_weight_matches_svd() -> None:
    gen = torch.Generator().manual_seed(3)
    lin = nn.Linear(30, 20)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(20, 30, generator=gen))
    sigma = _top_sv(lin.weight)
    assert sigma > 0.95
    sn = SpectralNormLinear(lin, bound=0.95, n_power_iterations=200)
    sn.train()
    sn(torch.randn(2, 30))
    assert _top_sv(sn.weight) == pytest.approx(0.95, abs=1e-3)
    # eval mode before any training also has a converged estimate (init iterations)
    sn2 = SpectralNormLinear(_linear_with_singular_values([3.0, 1.0]), bound=0.5)
    sn2.eval()
    assert _top_sv(sn2.weight) == pytest.approx(0.5, abs=1e-3)


def test_layer_below_bound_is_untouched() -> None:
    lin = _linear_with_singular_values([0.5, 0.3, 0.1])
    sn = SpectralNormLinear(lin, bound=0.95)
    x = torch.randn(7, 20)
    for mode in (True, False):
        sn.train(mode)
        out = sn(x)
        assert torch.equal(sn.weight, lin.weight)
        assert torch.equal(out, lin(x))


def test_eval_mode_does_not_change_u() -> None:
    sn = SpectralNormLinear(_linear_with_singular_values([3.0, 2.9, 1.0]), bound=1.0, n_init_iterations=0)
    u0, v0 = sn.u.clone(), sn.v.clone()
    sn.eval()
    x = torch.randn(3, 20)
    out1 = sn(x)
    with torch.no_grad():
        out2 = sn(x)
    assert torch.equal(sn.u, u0) and torch.equal(sn.v, v0)
    assert torch.equal(out1, out2)
    sn.train()
    sn(x)
    assert not torch.equal(sn.u, u0)  # training mode does update


def test_gradients_flow() -> None:
    lin = _linear_with_singular_values([3.0, 1.0])
    sn = SpectralNormLinear(lin, bound=0.95)
    sn.train()
    x = torch.randn(5, 20)
    sn(x).pow(2).sum().backward()
    sn(x).sum().backward()  # a second forward before step: buffers updated in place, graph intact
    g = lin.weight.grad
    assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0
    assert lin.bias.grad is not None and torch.isfinite(lin.bias.grad).all()


def test_gradient_includes_normalisation() -> None:
    lin = _linear_with_singular_values([3.0, 1.0])
    sn = SpectralNormLinear(lin, bound=0.95, n_init_iterations=100)
    sn.eval()
    x = torch.randn(5, 20, dtype=torch.float32)
    sn(x).sum().backward()
    u, v = sn.u.detach(), sn.v.detach()
    w = lin.weight.detach().clone().requires_grad_(True)
    ref = torch.nn.functional.linear(x, 0.95 * w / torch.dot(u, w @ v), lin.bias.detach())
    ref.sum().backward()
    assert torch.allclose(lin.weight.grad, w.grad, atol=1e-5)


def test_state_dict_carries_u() -> None:
    sn = SpectralNormLinear(_linear_with_singular_values([3.0, 1.0]), bound=0.95)
    keys = set(sn.state_dict())
    assert {"u", "v", "linear.weight", "linear.bias"} <= keys
    other = SpectralNormLinear(_linear_with_singular_values([2.0, 1.0], seed=5), bound=0.95, seed=9)
    other.load_state_dict(sn.state_dict())
    assert torch.equal(other.u, sn.u)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"bound": 0.0}, "bound"),
        ({"bound": -1.0}, "bound"),
        ({"n_power_iterations": 0}, "n_power_iterations"),
    ],
)
def test_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SpectralNormLinear(nn.Linear(3, 2), **kwargs)


def test_rejects_non_linear() -> None:
    with pytest.raises(ValueError, match="linear"):
        SpectralNormLinear(nn.Conv1d(1, 1, 1))  # type: ignore[arg-type]


def test_the_sngp_sections_read_the_layers_defaults_and_rules() -> None:
    """``sn_bound`` and ``sn_power_iterations`` of a profile default to the layer's own arguments, and a value
    the layer refuses is refused by the settings with the same words."""
    import inspect

    from calibrank.study.settings.checks import ConfigError
    from calibrank.study.settings.gp import SpectralNormSettings
    from calibrank.study.settings.schema import GPFBertConfig, SNGPConfig

    params = inspect.signature(SpectralNormLinear).parameters
    for section in (SNGPConfig(), GPFBertConfig()):
        assert (
            (section.sn_bound, section.sn_power_iterations)
            == (params["bound"].default, params["n_power_iterations"].default)
            == (0.95, 1)
        )
    with pytest.raises(ConfigError, match=r"^n_power_iterations: expected a positive integer, got 0$"):
        SpectralNormSettings(n_power_iterations=0)
    with pytest.raises(ConfigError, match=r"^bound: expected a positive number, got -1.0$"):
        SpectralNormLinear(nn.Linear(3, 2), bound=-1.0)
