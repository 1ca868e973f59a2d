"""Scoring each distinct (context, response) pair once per model and pass over the conditions of a split.

The samplers of one corpus share contexts, query ids and true responses, and often negatives:
``Ranker.predict_many`` scores the union of distinct pairs once and assembles each condition's
Predictions. Here on the tiny fixture: for every ranker kind the Predictions equal those of one
``predict`` per condition, array for array. Batches of one pair (``eval_batch_size=1``) take the
floating-point order of batched matrix products out of the comparison, so the equality is exact;
with the usual batches the numbers agree to float32 rounding.
"""

import numpy as np
import pytest

from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.experiment import predict_split
from calibrank.study.model.rankers import make_ranker
from calibrank.study.model.rankers.scoring import distinct_pairs
from rankfix import WORDS, learnable_queries, tiny_run

TRAIN, VALID = learnable_queries(64, 1, seed=0), learnable_queries(24, 3, seed=1)
GP = {
    "sngp": dict(n_features=64, samples=5),
    "gpf_bert": dict(n_features=64, samples=5),
    "pg_drr": dict(inducing=32, gibbs_chains=4, samples=5, length_scale=0.01),
}


def _conditions() -> list[list[RankingQuery]]:
    """Four conditions of one split: three samplers of one corpus (same qids, contexts and true
    responses; the negatives partly shared, in another order) and a second corpus."""
    base = learnable_queries(12, 3, seed=2)
    rng = np.random.default_rng(9)

    def sampler(tag: str, new: int) -> list[RankingQuery]:
        out = []
        for q in base:
            cands, labels = list(q.candidates), list(q.labels)
            for j in [i for i, y in enumerate(labels) if y == 0][:new]:
                cands[j] = f"{tag} says {WORDS[rng.integers(len(WORDS))]} is fine {q.qid} {j}"
            perm = rng.permutation(len(cands))
            out.append(RankingQuery(q.qid, q.context, tuple(cands[p] for p in perm), tuple(labels[p] for p in perm)))
        return out

    return [base, sampler("bm25", 1), sampler("random", 3), learnable_queries(8, 3, seed=5)]


PAIRS = 3 * 12 * 4 + 8 * 4


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def _fitted(name, models_dir, eval_batch_size=1, **kw):
    ranker = make_ranker(
        name, tiny_run(models_dir, seed=3, epochs=1, eval_batch_size=eval_batch_size), **{**GP.get(name, {}), **kw}
    )
    ranker.reuse_logits = False
    return ranker.fit(TRAIN, VALID)


def test_distinct_pairs_index_every_pair_of_every_set():
    sets = _conditions()
    union, index = distinct_pairs(sets)
    assert sum(ix.size for ix in index) == PAIRS
    assert len(union) == len({(q.context, c) for queries in sets for q in queries for c in q.candidates}) < PAIRS
    for queries, ix in zip(sets, index):
        for q, row in zip(queries, ix):
            assert [(union[i].context, union[i].candidates[0]) for i in row] == [(q.context, c) for c in q.candidates]
    by_query, index_q = distinct_pairs(sets, by_query=True)
    assert len(by_query) == len({(q.qid, c) for queries in sets for q in queries for c in q.candidates}) > len(union)
    for queries, ix in zip(sets, index_q):  # keyed by the query too: every pair keeps its own query id
        assert [[by_query[i].qid for i in row] for row in ix] == [[q.qid] * len(q.candidates) for q in queries]


@pytest.mark.parametrize(
    "name", ["bert", "temperature", "focal", "ensemble", "mc_dropout", "sngp", "gpf_bert", "pg_drr"]
)
def test_shared_scoring_gives_the_predictions_of_one_predict_per_condition(name, models_dir):
    ranker = _fitted(
        name,
        models_dir,
        **({"members": 2} if name == "ensemble" else {}),
        **({"passes": 3} if name == "mc_dropout" else {}),
    )
    sets = _conditions()
    shared = predict_split(ranker, sets)
    for queries, pred in zip(sets, shared):
        alone = ranker.predict(queries)
        for field in ("qids", "labels", "probs", "samples"):
            assert np.array_equal(getattr(pred, field), getattr(alone, field)), field
        info = pred.meta["shared_scoring"]
        assert info["pairs"] == PAIRS and info["distinct_pairs"] < PAIRS and info["query_sets"] == 4
    # The one shared scoring is credited to the sets by their pairs (48, 48, 48, 32 of 176): the shares add up
    # to its time (GP rankers add each set's own posterior on top), never 0 for a scoring that ran.
    seconds = [p.meta["inference_seconds"] for p in shared]
    total = shared[0].meta["shared_scoring"]["seconds"]
    assert total > 0
    if name in GP:
        assert sum(seconds) >= total - 0.003
    else:
        assert sum(seconds) == pytest.approx(total, abs=0.003)
        assert seconds[3] == pytest.approx(seconds[0] * 32 / 48, abs=0.002)
    if name == "mc_dropout":
        assert shared[0].meta["masks"] == "per_query" and (shared[0].var > 0).mean() > 0.9


def test_mc_dropout_with_per_pair_masks_predicts_each_condition_on_its_own(models_dir):
    ranker = _fitted("mc_dropout", models_dir, passes=3, masks="per_pair")
    sets = _conditions()
    for queries, pred in zip(sets, predict_split(ranker, sets)):
        assert "shared_scoring" not in pred.meta and pred.meta["masks"] == "per_pair"
        np.testing.assert_array_equal(pred.samples, ranker.predict(queries).samples)


@pytest.mark.parametrize("name", ["bert", "mc_dropout"])
def test_shared_scoring_with_usual_batches_agrees_to_float_rounding(name, models_dir):
    ranker = _fitted(name, models_dir, eval_batch_size=64, **({"passes": 3} if name == "mc_dropout" else {}))
    sets = _conditions()
    for queries, pred in zip(sets, predict_split(ranker, sets)):
        np.testing.assert_allclose(pred.samples, ranker.predict(queries).samples, rtol=0, atol=1e-6)


def test_profiles_choose_their_dropout_masks():
    from calibrank.study.settings.config import load_config

    assert load_config("smoke").rankers.mc_dropout.masks == "per_query"
    assert load_config("laptop").rankers.mc_dropout.masks == "per_query"
    assert load_config("paper").rankers.mc_dropout.masks == "per_pair"
