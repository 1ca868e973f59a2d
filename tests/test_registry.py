"""The ranker registry: what each ranker is, written once, read by the grid, the Makefile and the analyses."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from calibrank.predictions import Predictions
from calibrank.study.analysis import study as st
from calibrank.study.data.conditions import eval_conditions, expected_samples, predictions_path
from calibrank.study.pipeline import grid
from calibrank.study.settings import registry
from calibrank.study.settings.config import load_config


@pytest.fixture
def registered(monkeypatch):
    """Registry changes made by a test are undone after it."""
    monkeypatch.setattr(registry, "RANKERS", dict(registry.RANKERS))
    return registry


def test_every_ranker_of_the_config_is_described_once():
    from calibrank.study.settings.choices import RankerName

    assert set(registry.RANKERS) == {r.value for r in RankerName}
    assert registry.claimed_by(registry.Papers.penha_hauff) == ("mc_dropout", "ensemble")
    assert registry.of_family(registry.Family.gp) == ("sngp", "gpf_bert", "pg_drr") == st.GP_RANKERS
    cfg = load_config("laptop")
    assert [expected_samples(cfg, r) for r in ("bert", "mc_dropout", "ensemble", "sngp")] == [
        1,
        cfg.rankers.mc_dropout.passes,
        cfg.rankers.ensemble.members,
        cfg.rankers.sngp.samples,
    ]
    with pytest.raises(KeyError, match="unknown ranker 'nosuch'; known rankers: bert"):
        registry.info("nosuch")


def test_the_grid_and_the_makefile_follow_the_registry(registered):
    cfg = load_config(
        "smoke",
        {"rankers.names": ["bert", "mc_dropout", "focal"], "rankers.seeds": [0], "rankers.train_corpora": ["chitchat"]},
    )
    assert grid.shared_runs(cfg) == {"mc_dropout-chitchat": "bert-chitchat"}
    assert "focal-chitchat-seed0" in [m.name for m in grid.grid_models(cfg)]
    # describe focal as loading bert's model: the grid trains no focal model and make orders the runs
    registered.register(dataclasses.replace(registered.info("focal"), shares="bert"))
    assert grid.shared_runs(cfg) == {"mc_dropout-chitchat": "bert-chitchat", "focal-chitchat": "bert-chitchat"}
    assert grid.reused_scores(cfg) == {"focal-chitchat": "bert-chitchat"}  # mc_dropout samples its own masks
    focal = next(s for s in grid.steps(cfg) if s.name == "03_train-focal-chitchat")
    assert "reports/smoke/03_train-bert-chitchat.ipynb" in focal.inputs
    assert "focal-chitchat-seed0" not in [m.name for m in grid.grid_models(cfg)]


def test_a_toy_ranker_flows_through_the_analyses(registered, tmp_root):
    registered.register(
        registry.RankerInfo(
            "toy", "Toy ranker", registry.Family.stochastic, lambda cfg: 2, papers=(registry.Papers.penha_hauff,)
        )
    )
    cfg = load_config("smoke", {"rankers.names": ["bert"], "rankers.seeds": [0]})
    conds = tuple(c for c in eval_conditions(cfg) if c.split == "test")
    rng = np.random.default_rng(0)
    labels = np.zeros((12, conds[0].k + 1), dtype=np.int8)
    labels[:, 0] = 1
    runs = {}
    for r in ("bert", "toy"):
        for c in conds:
            probs = np.clip(rng.random(labels.shape) * 0.5 + 0.4 * labels, 0, 1)
            samples = np.stack([probs, probs]) if r == "toy" else probs[None]
            runs[(r, "chitchat", c.name)] = [
                Predictions(
                    np.arange(12).astype(str),
                    labels,
                    samples.mean(0),
                    samples,
                    meta={"seed": 0, "name": f"{r}/{c.name}"},
                )
            ]
    study = st.Study(
        cfg=cfg,
        rankers=("bert", "toy"),
        train_corpora=("chitchat",),
        conditions=conds,
        paths={k: [] for k in runs},
        _cache=runs,
    )
    overview = st.overview(study).set_index("ranker")
    assert overview.loc["toy", "method"] == "Toy ranker" and overview.loc["toy", "S"] == 2
    t2 = st.table2(study, n_resamples=200)
    assert set(t2["ranker"]) == {"toy"} and len(t2) == len(conds)
    from calibrank.study.analysis import verdicts

    claims = verdicts.calibration_claims(study, n_resamples=200)
    assert "toy has lower balanced ECE (debiased) than bert" in set(claims["claim"])  # a Penha & Hauff method now


def test_a_toy_ranker_enters_a_profile_and_the_grid(registered):
    """A ranker registered in this test alone is a valid ``rankers.names`` entry: the profile, the
    runs of notebook 03, the grid's models and the Makefile's ordering all list it."""
    with pytest.raises(Exception, match="rankers.names\\[1\\].*'toy'"):
        load_config("smoke", {"rankers.names": ["bert", "toy"], "rankers.seeds": [0]})
    registered.register(registry.RankerInfo("toy", "Toy ranker", registry.Family.deterministic, lambda cfg: 1))
    cfg = load_config(
        "smoke", {"rankers.names": ["bert", "toy"], "rankers.seeds": [0, 1], "rankers.train_corpora": ["chitchat"]}
    )
    assert [r.value for r in cfg.rankers.names] == ["bert", "toy"]
    assert json.loads(json.dumps(cfg.to_dict()))["rankers"]["names"] == ["bert", "toy"]  # sidecars, hashes
    from calibrank.study.settings.config import parse_run_name, train_runs

    assert "toy-chitchat" in train_runs(cfg) and "toy-chitchat-seed1" in train_runs(cfg)
    assert parse_run_name("toy-chitchat-seed1", cfg)[::2] == ("toy", 1)
    assert {"toy-chitchat-seed0", "toy-chitchat-seed1"} <= {m.name for m in grid.grid_models(cfg)}
    assert grid.run_models(cfg)["toy-chitchat"] == ["toy-chitchat-seed0"]
    assert grid.shared_runs(cfg) == {}
    assert not grid.model_for(cfg, "toy", "chitchat").data_parallel
    cond = eval_conditions(cfg)[0]
    assert predictions_path(cfg, "toy", "chitchat", cond, 1).parts[-3:-1] == ("toy", "chitchat")
    # described as sharing bert's model: it trains nothing of its own and make orders it after bert
    registered.register(
        registry.RankerInfo(
            "toy", "Toy ranker", registry.Family.deterministic, lambda cfg: 1, shares="bert", data_parallel=True
        )
    )
    assert grid.shared_runs(cfg) == {"toy-chitchat": "bert-chitchat", "toy-chitchat-seed1": "bert-chitchat-seed1"}
    assert grid.reused_scores(cfg) == grid.shared_runs(cfg)
    assert not any(m.name.startswith("toy-") for m in grid.grid_models(cfg))
    assert expected_samples(cfg, "toy") == 1
