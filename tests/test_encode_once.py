"""Scoring with no joint layer encodes each distinct side once and gives the pair path's numbers.

For every ranker kind that scores through :mod:`calibrank.study.model.encode_once` (bert, temperature,
focal, the ensemble's members, MC Dropout with per-query masks, the GP rankers' features), on the
tiny random BERT with the smoke profile's head (segments) and on MiniLM: logits within 1e-5 of
the pair path (the same model with every pair through the encoder) and the same orderings. fp32:
bf16 rounds the two paths' different batch shapes differently.
"""

import numpy as np
import pytest
import torch

from calibrank.pairs import score_pairs
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model import encode_once
from calibrank.study.model.backbone import load_backbone
from calibrank.study.model.cross_encoder import CrossEncoder
from calibrank.study.model.dropout_masks import score_pairs_per_query, score_sides_per_query
from calibrank.study.model.rankers import make_ranker
from calibrank.study.model.training import encode_pairs
from rankfix import learnable_queries, tiny_run

TRAIN, VALID = learnable_queries(48, 1, seed=0), learnable_queries(12, 3, seed=1)
GP = {
    "sngp": dict(n_features=64, samples=5, spectral_norm="none"),
    "gpf_bert": dict(n_features=64, samples=5, spectral_norm="none"),
    "pg_drr": dict(inducing=32, gibbs_chains=4, gibbs_steps=2, samples=5),
}
KINDS = ["bert", "temperature", "focal", "ensemble", "mc_dropout", "sngp", "gpf_bert", "pg_drr"]


def _queries() -> list[RankingQuery]:
    """Long contexts so that the room left by each candidate cuts a context differently (truncation variants)."""
    out = []
    for q in learnable_queries(10, 4, seed=7):
        ctx = ("we talked about many fruits yesterday evening at the market", *q.context)
        out.append(RankingQuery(q.qid, ctx, q.candidates, q.labels))
    return out


def _logits(ranker, queries) -> np.ndarray:
    """The ranker's logits ``[S, Q, K]`` (the GP rankers: posterior means, and the features they read)."""
    if ranker.name == "ensemble":
        return np.concatenate([ranker._timed_logits(t, queries)[0] for t in ranker.trained])
    if ranker.name == "mc_dropout":
        return ranker._timed_logits(ranker.trained, queries, **ranker.scoring())[0]
    if ranker.name in ("sngp", "gpf_bert", "pg_drr"):
        return ranker.joint_logits(queries)[0].cpu().numpy()[None]
    return ranker.logits(queries)[None]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.mark.parametrize("name", KINDS)
def test_encode_once_gives_the_pair_paths_logits_and_orderings(name, models_dir, monkeypatch):
    kw = {
        **GP.get(name, {}),
        **({"passes": 3} if name == "mc_dropout" else {}),
        **({"members": 2} if name == "ensemble" else {}),
    }
    run = tiny_run(
        models_dir,
        seed=3,
        epochs=1,
        joint_layers=0,
        pooling="segments",
        max_length=20,
        max_response_length=10,
        eval_batch_size=7,
    )
    ranker = make_ranker(name, run, **kw).fit(TRAIN, VALID)
    ranker.reuse_logits = False
    queries = _queries()
    pairs = encode_pairs(load_backbone("tiny-random").tokenizer, queries, max_length=20, max_response_length=10)
    sides = encode_once.split_sides(pairs)
    assert len(sides.ctx) < len(pairs) and len({tuple(c) for c in sides.ctx}) > len(
        queries
    )  # shared, and cut several ways

    calls = []
    real = encode_once.encode_sides
    monkeypatch.setattr(encode_once, "encode_sides", lambda *a, **k: calls.append(1) or real(*a, **k))
    once = _logits(ranker, queries)
    assert calls, "no side was encoded: the pair path ran"
    monkeypatch.setattr(encode_once, "applies", lambda model: False)
    calls.clear()
    pair = _logits(ranker, queries)
    assert not calls
    assert once.shape == pair.shape and np.std(pair) > 1e-3
    np.testing.assert_allclose(once, pair, rtol=0, atol=1e-5)
    assert np.array_equal(np.argsort(-once, axis=-1, kind="stable"), np.argsort(-pair, axis=-1, kind="stable"))
    if name == "mc_dropout":  # the passes are different sub-networks on both paths
        assert np.abs(once[0] - once[1]).max() > 1e-3


def test_joint_layers_keep_the_pair_path(models_dir, monkeypatch):
    run = tiny_run(
        models_dir, seed=3, epochs=1, joint_layers=1, pooling="segments", max_length=20, max_response_length=10
    )
    ranker = make_ranker("bert", run).fit(TRAIN, VALID)
    assert not encode_once.applies(ranker.trained.model)
    monkeypatch.setattr(encode_once, "encode_sides", lambda *a, **k: pytest.fail("a side was encoded alone"))
    ranker.reuse_logits = False
    assert np.isfinite(ranker.logits(_queries())).all()


@pytest.mark.parametrize("pooling", ["segments", "mean"])
def test_minilm_scores_each_side_once_as_the_pair_path(pooling):
    """The real backbone (untrained head), deterministic and with MC Dropout's per-query masks."""
    bb = load_backbone("all-MiniLM-L6-v2", joint_layers=0, hidden_dropout=0.1)
    model = CrossEncoder(bb, pooling=pooling, seed=0).eval()
    queries = _queries()[:6]
    pairs = encode_pairs(bb.tokenizer, queries, max_length=24, max_response_length=12)
    a = score_pairs(model, pairs, batch_size=8, precision="fp32")
    b = encode_once.logits_once(model, pairs, batch_size=5, precision="fp32")
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    keys = [pairs.qids[i] for i in pairs.query_index]
    kw = dict(passes=2, seed=11, max_length=25, precision="fp32")
    a = score_pairs_per_query(model, pairs, keys, batch_size=8, **kw)
    b = score_sides_per_query(model, pairs, keys, batch_size=5, **kw)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    k = len(queries[0].candidates)
    assert np.array_equal(np.argsort(-a.reshape(2, -1, k), -1), np.argsort(-b.reshape(2, -1, k), -1))


def test_sides_keep_apart_what_the_masks_tell_apart():
    """Under per-query masks a context is shared only within its query, a response only at one offset."""
    tok = load_backbone("tiny-random").tokenizer
    q = learnable_queries(1, 2, seed=0)[0]
    twice = [q, RankingQuery("other", q.context, q.candidates, q.labels)]
    pairs = encode_pairs(tok, twice, max_length=40, max_response_length=16)
    plain = encode_once.split_sides(pairs)
    keyed = encode_once.split_sides(pairs, np.repeat([0, 1], 3))
    assert (len(plain.ctx), len(plain.resp)) == (1, 3)
    assert (len(keyed.ctx), len(keyed.resp)) == (2, 6)
    assert (keyed.resp_side_offset == plain.resp_offset[0]).all()
    with torch.no_grad():
        sums, counts = encode_once.encode_sides(
            load_backbone("tiny-random").encoder, plain.ctx, batch_size=4, bf16=False, device=torch.device("cpu")
        )
    assert sums.shape == (1, 32) and counts.tolist() == [len(plain.ctx[0])]
