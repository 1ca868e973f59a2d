"""The no-learning baselines: BM25 against an independent implementation, ties, Platt scaling, Predictions."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from calibrank.metrics.ranking import recall_at_k  # noqa: E402
from calibrank.study.data import baselines as bl  # noqa: E402
from calibrank.study.data.schema import RankingQuery  # noqa: E402

POOL = [
    "i love pizza with cheese",
    "my cat sleeps all day",
    "pizza or pasta tonight",
    "the weather is cold and grey",
    "cheese makes everything better",
    "we went hiking in the mountains",
]


def test_bm25_matches_bm25s_lucene_scores():
    import bm25s

    query = "do you like pizza and cheese"  # no repeated term: bm25s and ours then agree term for term
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(
        bm25s.tokenize(POOL, lower=True, token_pattern=r"(?u)\b\w\w+\b", stopwords=None, show_progress=False),
        show_progress=False,
    )
    docs, scores = retriever.retrieve(
        bm25s.tokenize([query], lower=True, token_pattern=r"(?u)\b\w\w+\b", stopwords=None, show_progress=False),
        k=len(POOL),
        show_progress=False,
    )
    theirs = dict(zip(docs[0].tolist(), scores[0].tolist()))
    stats = bl.BM25Stats(POOL)
    ours = [stats.score(query, d) for d in POOL]
    assert ours == pytest.approx([theirs[i] for i in range(len(POOL))], rel=1e-5, abs=1e-6)
    assert ours[0] > ours[4] > 0 and ours[1] == 0.0


def test_bm25_scores_are_the_same_bits_in_every_process():
    """A float sum over a query's terms taken in a set's order changes in the last bits with the process's
    hash seed (PYTHONHASHSEED): the same data gave baselines 4e-17 apart in two runs."""
    import subprocess
    import sys

    code = (
        "import sys; from calibrank.study.data.baselines import BM25Stats; "
        "pool = [' '.join(f'w{(7 * i + j) % 97}' for j in range(i % 9 + 3)) for i in range(300)]; "
        "s = BM25Stats(pool); q = ' '.join(f'w{j}' for j in range(0, 97, 2)); "
        "print(repr(sum(s.score(q, d) for d in pool)), [s.score(q, d).hex() for d in pool[:40]])"
    )
    outputs = set()
    for hash_seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs


def _query(qid, context, candidates, relevant=0):
    return RankingQuery(
        qid=qid,
        context=tuple(context),
        candidates=tuple(candidates),
        labels=tuple(int(i == relevant) for i in range(len(candidates))),
    )


QUERIES = [
    _query("a", ["do you like pizza?"], ["yes, with extra cheese", "pizza is my favourite pizza", "my cat sleeps"]),
    _query("b", ["how is the weather?"], ["grey and cold all week", "the weather is the weather", "hiking"]),
]


def test_most_and_least_overlap_are_mirror_rules():
    stats = bl.BM25Stats(POOL + [c for q in QUERIES for c in q.candidates])
    most = bl.baseline_scores("bm25", QUERIES, seed=0, stats=stats)
    least = bl.baseline_scores("least_overlap", QUERIES, seed=0, stats=stats)
    assert (most.argmax(1) == [1, 1]).all()  # the candidates that repeat the context's words
    assert (least.argmax(1) != most.argmax(1)).all()
    labels = np.array([q.labels for q in QUERIES])
    assert recall_at_k(most, labels, 1).mean() == 0.0
    with pytest.raises(ValueError, match="BM25 statistics"):
        bl.baseline_scores("bm25", QUERIES, seed=0)
    # the overlap computed once gives both rules the same scores as their own computation
    overlap = bl.bm25_overlap(QUERIES, stats)
    assert np.array_equal(bl.baseline_scores("bm25", QUERIES, seed=0, overlap=overlap), most)
    assert np.array_equal(bl.baseline_scores("least_overlap", QUERIES, seed=0, overlap=overlap), least)
    with pytest.raises(ValueError, match=r"overlap has shape \(1, 3\), the queries \(2, 3\)"):
        bl.baseline_scores("bm25", QUERIES, seed=0, overlap=overlap[:1])


def test_exact_ties_are_broken_at_random_with_the_seed():
    q = [_query(str(i), ["zzz"], ["a b c", "d e f", "g h i", "j k l"]) for i in range(400)]
    stats = bl.BM25Stats(POOL)
    s = bl.baseline_scores("least_overlap", q, seed=1, stats=stats)
    assert (np.diff(np.sort(s, axis=1), axis=1) > 0).all()  # no ties left
    np.testing.assert_array_equal(s, bl.baseline_scores("least_overlap", q, seed=1, stats=stats))
    assert not np.array_equal(s, bl.baseline_scores("least_overlap", q, seed=2, stats=stats))
    r1 = recall_at_k(s, np.array([x.labels for x in q]), 1).mean()
    assert abs(r1 - 0.25) < 0.07  # all tied: the relevant one is first a quarter of the time


def test_random_baseline_is_at_chance():
    q = [_query(str(i), ["hello"], [f"c{j} text" for j in range(10)], relevant=i % 10) for i in range(2000)]
    r1 = recall_at_k(bl.baseline_scores("random", q, seed=0), np.array([x.labels for x in q]), 1).mean()
    assert abs(r1 - 0.1) < 0.02


def test_platt_recovers_a_known_logistic_map():
    rng = np.random.default_rng(0)
    x = rng.normal(size=20000)
    y = rng.random(20000) < 1 / (1 + np.exp(-(2.0 * x - 1.0)))
    a, b = bl.platt_fit(x, y)
    assert a == pytest.approx(2.0, abs=0.1) and b == pytest.approx(-1.0, abs=0.1)
    a0, b0 = bl.platt_fit(np.zeros(100), np.arange(100) < 10)  # no spread: the base rate
    assert a0 == 0.0 and bl.platt_apply(np.zeros(1), (a0, b0))[0] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="both 0 and 1"):
        bl.platt_fit(x[:5], np.zeros(5))


def test_predictions_keep_the_rules_order_and_are_probabilities():
    scores = np.array([[3.0, 1.0, 2.0], [0.1, 0.3, 0.2]])
    pred = bl.baseline_predictions("bm25", QUERIES, scores, (1e-9, 0.0))  # a map that squashes every score to 0.5
    np.testing.assert_array_equal(np.argsort(pred.probs, axis=1), np.argsort(scores, axis=1))
    assert pred.n_samples == 1 and pred.meta["baseline"] == "bm25"


def test_biencoder_prefers_the_paraphrase():
    q = [
        _query(
            "p",
            ["what's your favourite food?"],
            ["I really love eating sushi", "my car broke down", "the train was late again"],
        )
    ]
    s = bl.baseline_scores("biencoder", q, seed=0)
    assert s.argmax() == 0


def test_biencoder_similarity_of_several_sets_encodes_each_text_once(monkeypatch):
    a = [
        _query("a", ["what's your favourite food?"], ["I love sushi", "my car broke down", "late train"]),
        _query("b", ["where do you live?"], ["in Delft", "I love sushi", "blue"]),
    ]
    b = [
        _query("a", ["what's your favourite food?"], ["I love sushi", "blue", "in Delft"]),  # another sampler
        _query("c", ["in Delft"], ["where do you live?", "blue", "late train"]),
    ]  # contexts and candidates share texts
    alone = [bl.biencoder_similarity([qs])[0] for qs in (a, b)]
    encoded: list[str] = []
    real = bl.encode
    monkeypatch.setattr(bl, "encode", lambda model, texts, **kw: encoded.extend(texts) or real(model, texts, **kw))
    together = bl.biencoder_similarity([a, b])
    assert len(encoded) == len(set(encoded)) and sorted(encoded) == sorted(
        {
            "I love sushi",
            "my car broke down",
            "late train",
            "in Delft",
            "blue",
            "what's your favourite food?",
            "where do you live?",
        }
    )
    for x, y in zip(together, alone):
        assert x.shape == y.shape and np.allclose(x, y, atol=1e-5)
    np.testing.assert_allclose(
        bl.baseline_scores("biencoder", b, seed=0, similarity=together[1]), together[1], atol=1e-8
    )
    with pytest.raises(ValueError, match="similarity has shape"):
        bl.baseline_scores("biencoder", b, seed=0, similarity=together[0][:1])
    with pytest.raises(ValueError, match="query set 1 needs queries with one number of candidates, got no query"):
        bl.biencoder_similarity([a, []])


def test_ranking_check_flags_a_shortcut_and_a_ranker_below_chance():
    import pandas as pd

    def rows(ranker, r1):
        return [
            {"ranker": ranker, "train_corpus": "a", "corpus": c, "sampler": s, "shift": sh, "R@1": v}
            for (c, s, sh), v in zip(
                [("a", "mixed", "in distribution"), ("a", "random", "cross-NS"), ("b", "mixed", "cross-domain")], r1
            )
        ]

    metrics = pd.DataFrame(rows("good", [0.6, 0.4, 0.3]) + rows("shortcut", [0.42, 0.05, 0.2]))
    rules = pd.DataFrame(rows("baseline:least_overlap", [0.4, 0.05, 0.1]) + rows("baseline:random", [0.1, 0.1, 0.1]))
    check = bl.ranking_check(metrics, rules, k=9).set_index("ranker")
    assert check.loc["good", "best rule"] == "least overlap" and check.loc["good", "margin"] == pytest.approx(0.2)
    assert not check.loc["good", "at or below chance"] and check.loc["shortcut", "at or below chance"]
    assert check.loc["shortcut", "lowest on"] == "a · random"
    warnings = bl.ranking_warnings(check.reset_index())
    assert len(warnings) == 2 and all(w.startswith("shortcut") for w in warnings)


def write_rule_predictions(cfg, n: int = 8, seed: int = 0) -> None:
    """Predictions of every rule on every test condition of ``cfg`` (trained on chitchat): random scores,
    the relevant candidate first, ``n`` queries."""
    from calibrank.study.data.conditions import eval_conditions

    rng = np.random.default_rng(seed)
    for c in eval_conditions(cfg, ("test",)):
        labels = np.zeros((n, c.k + 1), dtype=np.int8)
        labels[:, 0] = 1
        qs = [
            RankingQuery(f"q{i}", ("hi",), tuple(f"c{j}" for j in range(c.k + 1)), tuple(labels[i])) for i in range(n)
        ]
        for name in bl.BaselineName:
            p = bl.baseline_predictions(name, qs, rng.random(labels.shape), (1.0, -1.0))
            p.save(bl.baselines_path(cfg, name, "chitchat", c))


def test_table1_shows_the_rules_as_reference_rows(tmp_root):
    from calibrank.study.analysis import study as st
    from calibrank.study.data.conditions import eval_conditions
    from calibrank.study.settings.config import load_config

    cfg = load_config("smoke", {"rankers.names": ["bert"], "rankers.seeds": [0]})
    write_rule_predictions(cfg)
    study = st.Study(
        cfg=cfg, rankers=("bert",), train_corpora=("chitchat",), conditions=tuple(eval_conditions(cfg)), paths={}
    )
    assert len(st.baseline_metrics_table(study)) == 4 * len(study.test_conditions())
    rules = st.baseline_interval_table(study, n_resamples=200)
    assert len(rules) == 4 * len(study.test_conditions()) and set(rules["ranker"]) == {
        f"baseline:{n.value}" for n in bl.BaselineName
    }
    assert ((rules["R@1 lo"] <= rules["R@1"]) & (rules["R@1"] <= rules["R@1 hi"])).all()
    bert = rules[rules["ranker"] == "baseline:random"].assign(ranker="bert")
    t1 = st.table1(study, bert)
    wide = st.table1_wide(t1, st.table1_reference(study, rules))
    assert list(wide.index) == [
        "bert trained on chitchat",
        "random (Platt on chitchat)",
        "BM25 (most overlap) (Platt on chitchat)",
        "least overlap (Platt on chitchat)",
        "bi-encoder (zero-shot) (Platt on chitchat)",
    ]
    assert wide.loc["bert trained on chitchat"].equals(wide.loc["random (Platt on chitchat)"])
    assert not wide.loc["BM25 (most overlap) (Platt on chitchat)"].equals(wide.loc["random (Platt on chitchat)"])


def test_platt_never_reverses_a_rule():
    """A rule that is anti-correlated with relevance on the fitting data keeps its own order (flat probabilities)."""
    x = np.linspace(0, 1, 200)
    y = x < 0.3  # relevance falls as the score rises
    ab = bl.platt_fit(x, y)
    assert ab[0] == 0.0 and bl.platt_apply(np.zeros(1), ab)[0] == pytest.approx(0.3, abs=0.01)
    scores = np.array([[0.9, 0.1, 0.5]])
    pred = bl.baseline_predictions("bm25", QUERIES[:1], scores, ab)
    assert pred.probs.argmax() == 0  # still "most overlap first"
