"""Training with each context encoded once per step gives the pair rows' loss and gradients, and trains.

With no joint layer a batch of sides (:func:`calibrank.study.model.encode_once.collate_sides`) holds each
distinct context and response once; in eval mode (no dropout) its logits, loss and every parameter's
gradient match the pair rows' within float32 rounding, for the dense head and for both GP heads. The
batches hold whole queries, as many pairs and steps as the pair path, and the loop records which path ran.
"""

import numpy as np
import pytest
import torch

from calibrank.pairs import collate, length_batches
from calibrank.study.model import encode_once
from calibrank.study.model.backbone import load_backbone
from calibrank.study.model.cross_encoder import SIDE_KEYS, CrossEncoder
from calibrank.study.model.rankers import make_ranker
from calibrank.study.model.training import encode_pairs
from rankfix import learnable_queries, tiny_run

TRAIN, VALID = learnable_queries(40, 1, seed=0), learnable_queries(12, 3, seed=1)


def _pairs(queries, max_length=24):
    tokenizer = load_backbone("tiny-random").tokenizer
    return encode_pairs(tokenizer, queries, max_length=max_length, max_response_length=10, require_relevant=True)


def _long_queries():
    """Contexts long enough that the room each candidate leaves cuts them differently."""
    out = []
    for q in learnable_queries(12, 1, seed=5):
        ctx = ("we talked about many fruits yesterday evening at the market", *q.context)
        out.append(type(q)(q.qid, ctx, q.candidates, q.labels))
    return out


def test_query_batches_hold_whole_queries_and_the_pair_paths_step_count():
    pairs = _pairs(TRAIN)
    for epoch in range(3):
        batches = encode_once.query_batches(pairs, 16, seed=13, epoch=epoch)
        assert len(batches) == len(length_batches(pairs.lengths, 16, seed=13, epoch=epoch))
        flat = np.concatenate(batches)
        assert sorted(flat.tolist()) == list(range(len(pairs)))
        for b in batches:
            assert len(b) <= 16
            queries = pairs.query_index[b]
            for q in np.unique(queries):  # every pair of a query in the batch is there
                assert (queries == q).sum() == pairs.n_candidates
    again = encode_once.query_batches(pairs, 16, seed=13, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(again, encode_once.query_batches(pairs, 16, seed=13, epoch=0)))
    other = encode_once.query_batches(pairs, 16, seed=13, epoch=1)
    assert any(not np.array_equal(a, b) for a, b in zip(again, other))


def test_a_batch_of_sides_encodes_each_distinct_side_once():
    pairs = _pairs(_long_queries(), max_length=20)
    sides = encode_once.split_sides(pairs)
    index = np.arange(len(pairs))
    batch = encode_once.collate_sides(sides, index)
    assert sorted(batch) == sorted(SIDE_KEYS)
    assert batch["ctx_ids"].shape[0] == len(np.unique(sides.ctx_of)) < len(pairs)
    assert batch["resp_ids"].shape[0] == len(np.unique(sides.resp_of))
    for i in index:  # each pair's rows rebuild its own pair row
        c = batch["ctx_ids"][batch["ctx_of"][i]][batch["ctx_mask"][batch["ctx_of"][i]].bool()].tolist()
        r = batch["resp_ids"][batch["resp_of"][i]][batch["resp_mask"][batch["resp_of"][i]].bool()].tolist()
        assert c + r[1:] == pairs.input_ids[i]


@pytest.mark.parametrize("pooling", ["segments", "mean"])
@pytest.mark.parametrize("name", ["bert", "sngp", "pg_drr"])
def test_sides_give_the_pair_rows_loss_and_gradients(name, pooling, tmp_path):
    kw = {"sngp": dict(n_features=32, samples=3, spectral_norm="none"), "pg_drr": dict(inducing=16, gibbs_chains=2)}
    run = tiny_run(tmp_path, seed=4, joint_layers=0, pooling=pooling, max_length=20, max_response_length=10)
    ranker = make_ranker(name, run, **kw.get(name, {}))
    model, _ = ranker._build(4)
    model.eval()  # no dropout: both paths are then one function of the weights
    pairs = _pairs(_long_queries(), max_length=20)
    index = encode_once.query_batches(pairs, 16, seed=1, epoch=0)[0]
    labels = torch.as_tensor(pairs.labels[index])
    grads = []
    for batch in (collate(pairs, index), encode_once.collate_sides(encode_once.split_sides(pairs), index)):
        model.zero_grad()
        torch.manual_seed(0)  # PG-DRR's Gibbs draws read the torch RNG
        loss = ranker.loss(model, batch, labels)
        loss.backward()
        grads.append((loss.item(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}))
    (l0, g0), (l1, g1) = grads
    assert l1 == pytest.approx(l0, rel=1e-5, abs=1e-6)
    assert g0.keys() == g1.keys() and len(g0) > 10
    for k in g0:
        torch.testing.assert_close(g1[k], g0[k], rtol=1e-4, atol=1e-6, msg=k)


def test_sides_are_refused_where_a_layer_is_joint():
    backbone = load_backbone("tiny-random", joint_layers=1)
    model = CrossEncoder(backbone, pooling="segments")
    pairs = _pairs(TRAIN[:4])
    batch = encode_once.collate_sides(encode_once.split_sides(pairs), np.arange(len(pairs)))
    with pytest.raises(ValueError, match="joint_layers 0"):
        model(**batch)
    with pytest.raises(ValueError, match="keys"):
        CrossEncoder(load_backbone("tiny-random", joint_layers=0), pooling="segments")(ctx_ids=batch["ctx_ids"])


@pytest.mark.parametrize("once", [True, False])
def test_the_loop_trains_on_sides_and_records_it(once, tmp_path):
    run = tiny_run(tmp_path, seed=2, joint_layers=0, pooling="segments", encode_once=once, epochs=4)
    ranker = make_ranker("bert", run).fit(TRAIN, VALID)
    result = ranker.training_results()[0]
    assert result.encode_once is once
    assert result.steps == 4 * len(length_batches(np.ones(2 * len(TRAIN)), 16, seed=0))
    losses = [h["loss"] for h in result.history]
    assert np.mean(losses[-3:]) < np.mean(losses[:3])  # it learns
    assert ranker.logits(VALID).reshape(len(VALID), -1).argmax(1).tolist() == [
        q.labels.index(1) for q in VALID
    ]  # and ranks the agreeing response first


def test_joint_layers_keep_the_pair_rows(tmp_path):
    run = tiny_run(tmp_path, seed=2, joint_layers=None, pooling="segments", epochs=1)
    assert make_ranker("bert", run).fit(TRAIN, VALID).training_results()[0].encode_once is False
