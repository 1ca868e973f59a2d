"""A ranker written from the contract alone (``toy_ranker.py``) and one registry line: trained and predicted
as notebook 03 does, then read by notebook 04's tables, on a throw-away smoke study."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from calibrank.study.analysis import study as st
from calibrank.study.data.io import write_queries
from calibrank.study.data.querysets import query_set_path, query_set_specs
from calibrank.study.model import experiment
from calibrank.study.model.rankers import make_ranker, ranker_class
from calibrank.study.settings import registry
from calibrank.study.settings.config import load_config
from rankfix import learnable_queries, tiny_run
from toy_ranker import LabelSmoothingRanker


@pytest.fixture
def toy(monkeypatch):
    """The registry with the toy ranker in it, undone after the test."""
    monkeypatch.setattr(registry, "RANKERS", dict(registry.RANKERS))
    registry.register(
        registry.RankerInfo(
            "toy",
            "BERT + label smoothing",
            registry.Family.deterministic,
            lambda cfg: 1,
            impl="toy_ranker:LabelSmoothingRanker",
        )
    )
    return registry


def test_the_toy_ranker_is_a_short_file_that_states_its_settings():
    source = inspect.getsource(LabelSmoothingRanker)
    assert len(source.splitlines()) <= 40
    params = inspect.signature(LabelSmoothingRanker).parameters
    assert list(params) == ["run", "smoothing"] and params["smoothing"].default == 0.1
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_the_toy_rankers_model_key_follows_its_own_code(tmp_path, monkeypatch):
    """A ranker written outside calibrank is keyed by its code as a built-in one is: an edit of its loss is a new model."""
    import toy_ranker
    from calibrank.study import codekey

    ranker = LabelSmoothingRanker(tiny_run(tmp_path))
    queries = learnable_queries(4, 1, seed=0)
    before, bert = ranker.model_dirs(queries)[0].name, make_ranker("bert", tiny_run(tmp_path))
    assert ranker.training_code() != bert.training_code()
    edited = inspect.getsource(toy_ranker).replace("self.smoothing / 2", "self.smoothing / 3")
    codekey.forget()
    monkeypatch.setitem(codekey._SOURCES, "toy_ranker", edited)
    try:
        assert ranker.model_dirs(queries)[0].name != before
    finally:
        monkeypatch.delitem(codekey._SOURCES, "toy_ranker")
        codekey.forget()
    assert ranker.model_dirs(queries)[0].name == before


def test_every_ranker_states_its_settings_in_its_signature():
    """The run first, then each built-in ranker's own settings and nothing else: keyword parameters with
    defaults, exactly the fields and defaults of its profile section (no ``**kw``)."""
    from calibrank.study.settings.schema import RankersConfig

    sections = RankersConfig()
    signatures = {}
    for name in registry.RANKERS:
        run, *own = inspect.signature(ranker_class(name)).parameters.values()
        assert (run.name, run.kind, run.default) == ("run", inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.empty)
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in own), name
        section = getattr(sections, name, None)
        assert {p.name: p.default for p in own} == (vars(section) if section is not None else {}), name
        signatures[name] = [(p.name, p.default) for p in own]
    # gpf_bert restates sngp's list less the loss (it always trains with focal loss): the two stay one list
    assert signatures["gpf_bert"] == [(n, d) for n, d in signatures["sngp"] if n != "loss"]


def test_a_toy_ranker_runs_through_notebooks_03_and_04(toy, tmp_root):
    with pytest.raises(ValueError, match="toy: smoothing: expected a number in"):
        make_ranker("toy", tiny_run(tmp_root), smoothing=1.5)
    cfg = load_config(
        "smoke",
        {
            "rankers.names": ["bert", "toy"],
            "rankers.seeds": [0],
            "rankers.train_corpora": ["chitchat"],
            "data.corpora": ["chitchat"],
            "negatives.eval": ["mixed", "random"],
            "training.max_length": 40,
            "training.max_response_length": 16,
            "training.epochs": 3,
            "training.lr": 2e-3,
        },
    )
    for i, spec in enumerate(query_set_specs(cfg)):
        write_queries(query_set_path(cfg, spec), learnable_queries(24 if spec.split == "train" else 8, spec.k, seed=i))
    summaries = {}
    for name in ("bert", "toy"):  # notebook 03, one ranker at a time
        ranker = experiment.train_ranker(cfg, name, "chitchat")
        assert isinstance(ranker, LabelSmoothingRanker) == (name == "toy")
        summaries[name] = experiment.predict_conditions(cfg, ranker, "chitchat")
    toy_run, bert_run = summaries["toy"], summaries["bert"]
    assert list(toy_run["sampler"]) == ["mixed", "random"] and (toy_run["samples"] == 1).all()
    assert (toy_run["R10@1"] >= 0.75).all()  # it learned the fixture's signal
    # smoothed targets keep the probabilities off 0 and 1: a different model from bert's
    assert not np.allclose(toy_run["ECE"], bert_run["ECE"])
    data = st.load_study(cfg)  # notebook 04
    overview = st.overview(data).set_index("ranker")
    assert overview.loc["toy", "method"] == "BERT + label smoothing" and overview.loc["toy", "S"] == 1
    metrics = st.metrics_table(data)
    assert set(metrics["ranker"]) == {"bert", "toy"}
    table2 = st.table2(data, n_resamples=200)
    assert set(table2["ranker"]) == {"toy"} and len(table2) == 2
    assert table2.notna().any(axis=None)
