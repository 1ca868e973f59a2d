"""Invariants of the negative samplers (random, BM25, embedding), of build_queries and of the query cache."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from calibrank.study.data import io as data_io  # noqa: E402
from calibrank.study.data import negatives as neg  # noqa: E402
from calibrank.study.data.schema import DataError, Example, normalise_text  # noqa: E402

# A small chit-chat-like corpus: a few topics, several (context, response) pairs each, so that
# lexical and semantic neighbours exist and differ from random picks.
DIALOGUES = {
    "food": [
        (("hey, what did you have for dinner?",), "I made a big bowl of pasta with tomato sauce and garlic bread."),
        (
            ("do you like pizza?", "yes, pepperoni is my favourite"),
            "Pepperoni pizza with extra cheese is the best pizza ever.",
        ),
        (("are you a good cook?",), "Not really, I mostly burn the rice and order takeout."),
        (("what is your favourite dessert?",), "Chocolate cake, definitely, with a scoop of vanilla ice cream."),
        (("i'm hungry", "me too, want to grab lunch?"), "Sure, let's get sushi or maybe a burger at the diner."),
        (
            ("have you tried the new thai place?",),
            "Yes! Their green curry and pad thai are really spicy but delicious.",
        ),
    ],
    "pets": [
        (("do you have any pets?",), "I have two cats, they sleep on my bed all day."),
        (("dogs or cats?",), "Dogs for sure, my puppy loves playing fetch in the park."),
        (
            ("my dog keeps barking at night", "that sounds annoying"),
            "Maybe your dog is bored, try a long walk before bed.",
        ),
        (("what is your cat's name?",), "Her name is Luna, she is a fluffy grey kitten."),
        (("i want to adopt a pet",), "Go to the animal shelter, there are so many dogs and cats waiting for a home."),
    ],
    "travel": [
        (("where did you go on vacation?",), "We went to Spain, the beaches in Barcelona were amazing."),
        (("have you ever been to japan?",), "Not yet, but Tokyo and Kyoto are at the top of my travel list."),
        (("do you like flying?", "i hate airports"), "Same, long flights and airport security lines are the worst."),
        (("what's your dream trip?",), "A road trip across the United States, from New York to California."),
        (("i just booked a hotel in paris",), "Paris is lovely, visit the Eiffel Tower and eat lots of croissants."),
    ],
    "sports": [
        (("did you watch the game last night?",), "Yes, what a match, the final goal in extra time was incredible."),
        (("do you play any sports?",), "I play basketball with friends every weekend at the gym."),
        (("who is your favourite football team?",), "I support Liverpool, they won the league this season."),
        (("i started running",), "Nice, running in the morning is great, are you training for a marathon?"),
        (("tennis or golf?",), "Tennis, golf is too slow for me, I like to run around the court."),
    ],
    "music": [
        (("what music do you listen to?",), "Mostly rock and some jazz, I love old Beatles songs."),
        (("do you play an instrument?",), "I play the guitar a little, and I'm learning piano."),
        (
            ("have you been to a concert recently?",),
            "Yes, I saw a live concert last month, the band played all their hits.",
        ),
        (("who is your favourite singer?", "mine is adele"), "I like Taylor Swift, her new album is on repeat."),
        (("i can't sing at all",), "Me neither, but karaoke night with friends is still fun."),
    ],
    "weather": [
        (("how is the weather there?",), "It's been raining all week, so grey and cold."),
        (("do you like snow?",), "I love snow, building a snowman in winter is the best."),
        (("it is so hot today",), "Yes, this summer heat is crazy, I stay inside with the air conditioning."),
        (("is it sunny where you are?",), "Sunny and warm, perfect weather for a picnic in the park."),
    ],
    "work": [
        (("what do you do for work?",), "I'm a software engineer, I write code all day."),
        (
            ("how was your day at the office?", "long meetings again?"),
            "Terrible, my boss scheduled three meetings back to back.",
        ),
        (("do you like your job?",), "Mostly, the pay is fine but the commute to work is long."),
        (("are you a student?",), "Yes, I study biology at the university and have exams next week."),
    ],
}


def _examples() -> list[Example]:
    out = []
    for topic, pairs in DIALOGUES.items():
        for i, (ctx, resp) in enumerate(pairs):
            out.append(
                Example(eid=f"{topic}-{i}", context=ctx, response=resp, dialogue_id=f"d-{topic}-{i}", domain=topic)
            )
    return out


EXAMPLES = _examples()
# Extra pool entries: spelling variants (case/whitespace) of true responses, which must never
# come back as negatives, plus a few distractors.
VARIANTS = [
    "i made a big bowl of PASTA   with tomato sauce and garlic bread.",
    "  I HAVE TWO CATS, they sleep on my bed all day.  ",
    "we went to spain,\tthe beaches in barcelona were amazing.",
    "Mostly rock and some jazz,  I love old Beatles songs.",
]
DISTRACTORS = ["ok", "lol", "haha yes", "I don't know, what about you?", "Good night, talk tomorrow!"]
POOL = [e.response for e in EXAMPLES] + VARIANTS + DISTRACTORS
K = 3
ALL = ["random", "bm25", "embedding"]

_TOK = re.compile(r"\w\w+")


def _tokens(text: str) -> set[str]:
    return set(_TOK.findall(text.lower()))


@pytest.fixture(autouse=True)
def _isolated_root(tmp_path, monkeypatch):
    """Every cache (negatives, embeddings) goes to a fresh folder, never the project's data/cache."""
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def minilm():
    """The bundled MiniLM, loaded once for the session (load_embedding_model memoises it)."""
    return neg.load_embedding_model(neg.DEFAULT_EMBEDDING_MODEL, device="cpu")


@pytest.fixture
def sampler(request, minilm):
    return neg.make_sampler(request.param, POOL)


def _check_invariants(examples, negs, k):
    assert len(negs) == len(examples)
    for ex, ns in zip(examples, negs):
        assert len(ns) == k
        assert all(isinstance(n, str) and n for n in ns)
        norms = [normalise_text(n) for n in ns]
        assert len(set(norms)) == k, f"duplicate negatives for {ex.eid}: {ns}"
        assert normalise_text(ex.response) not in norms, f"true response (or a variant) among negatives of {ex.eid}"
        assert all(normalise_text(n) in {normalise_text(p) for p in POOL} for n in ns)


# --------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("sampler", ALL, indirect=True)
def test_invariants_and_determinism(sampler):
    negs = sampler.negatives(EXAMPLES, K, seed=7)
    _check_invariants(EXAMPLES, negs, K)
    assert sampler.negatives(EXAMPLES, K, seed=7) == negs
    # per-example determinism: a subset (in another order) gets the same negatives
    sub = EXAMPLES[::-3]
    by_eid = dict(zip((e.eid for e in EXAMPLES), negs))
    assert sampler.negatives(sub, K, seed=7) == [by_eid[e.eid] for e in sub]


def test_pool_dedup_keeps_first_spelling_and_drops_empties():
    s = neg.make_sampler("random", ["Hi there", "hi   THERE", "", "   ", "Bye", "bye"])
    assert s.pool == ["Hi there", "Bye"]
    assert len(neg.make_sampler("random", POOL).pool) == len(POOL) - len(VARIANTS)


def test_variants_of_true_response_never_negatives_even_when_everything_is_drawn():
    # pool of 4 distinct texts (after dedup), one of them the true response: k=3 must take all others
    ex = Example("x", ("what did you eat?",), "I made a big bowl of pasta with tomato sauce and garlic bread.")
    pool = [VARIANTS[0], "ok", "lol", ex.response, "haha yes"]
    for name in ("random", "bm25"):
        (ns,) = neg.make_sampler(name, pool).negatives([ex], 3, seed=0)
        assert sorted(ns) == ["haha yes", "lol", "ok"]


@pytest.mark.parametrize("name", ["random", "bm25", "embedding"])
def test_context_turns_are_never_negatives(name, minilm):
    # In a pool of every turn, the context's own turns are the best lexical and semantic
    # matches of the context: they must be excluded (a copied turn is no candidate response).
    ctx = ("do you like pizza?", "yes, pepperoni is my favourite")
    ex = Example("ctx", ctx, "Pepperoni pizza with extra cheese is the best pizza ever.")
    pool = [*ctx, "YES,  pepperoni is my favourite", ex.response, *POOL]
    (ns,) = neg.make_sampler(name, pool).negatives([ex], K, seed=0)
    assert not {normalise_text(n) for n in ns} & {normalise_text(c) for c in ctx}
    small = [*ctx, ex.response, "a", "b"]  # 2 possible negatives once context and truth are out
    with pytest.raises(DataError, match="only 2 possible negatives once its true response and its context turns"):
        neg.make_sampler("random", small).negatives([ex], 3, seed=0)


def test_random_differs_across_seeds():
    s = neg.make_sampler("random", POOL)
    a, b = s.negatives(EXAMPLES, K, seed=1), s.negatives(EXAMPLES, K, seed=2)
    assert sum(x != y for x, y in zip(a, b)) > len(EXAMPLES) // 2


def test_bm25_negatives_overlap_context_more_than_random():
    bm25 = neg.make_sampler("bm25", POOL)
    rnd = neg.make_sampler("random", POOL)

    def overlap(negs):
        return np.mean([len(_tokens(n) & _tokens(" ".join(e.context))) for e, ns in zip(EXAMPLES, negs) for n in ns])

    o_bm25, o_rnd = overlap(bm25.negatives(EXAMPLES, K, 0)), overlap(rnd.negatives(EXAMPLES, K, 0))
    assert o_bm25 > 2 * o_rnd, (o_bm25, o_rnd)
    assert bm25.n_filled < len(EXAMPLES) * K


def test_bm25_fills_with_random_when_no_lexical_match():
    bm25 = neg.make_sampler("bm25", POOL)
    ex = Example("nomatch", ("xyzzy plugh",), "Nothing happens.")
    (ns,) = bm25.negatives([ex], K, seed=3)
    assert bm25.n_filled == K and bm25.stats["n_queries_filled"] == 1
    _check_invariants([ex], [ns], K)
    assert bm25.negatives([ex], K, seed=3) == [ns]


def test_bm25_query_utterances_uses_recent_turns():
    ex = Example("q", ("tell me about your guitar and piano", "anyway, the weather is so hot and sunny"), "It is.")
    last = neg.make_sampler("bm25", POOL, query_utterances=1).negatives([ex], K, 0)[0]
    whole = neg.make_sampler("bm25", POOL).negatives([ex], K, 0)[0]
    assert _tokens(last[0]) & {"hot", "sunny", "weather"}
    assert any("guitar" in n for n in whole) and not any("guitar" in n for n in last)
    with pytest.raises(ValueError, match="query_utterances"):
        neg.make_sampler("bm25", POOL, query_utterances=0)


def test_embedding_negatives_closer_than_random(minilm):
    emb = neg.make_sampler("embedding", POOL)
    rnd = neg.make_sampler("random", POOL)
    ctx = emb.embed_contexts(EXAMPLES)
    vec = {t: emb.pool_embeddings[i] for i, t in enumerate(emb.pool)}
    assert emb.pool_embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb.pool_embeddings, axis=1), 1.0, atol=1e-4)

    def sim(negs):
        return np.mean([float(c @ vec[n]) for c, ns in zip(ctx, negs) for n in ns])

    s_emb, s_rnd = sim(emb.negatives(EXAMPLES, K, 0)), sim(rnd.negatives(EXAMPLES, K, 0))
    assert s_emb > s_rnd + 0.1, (s_emb, s_rnd)


def test_embedding_pool_cache_is_reused(minilm, monkeypatch):
    first = neg.make_sampler("embedding", POOL)
    files = list((neg.paths.cache_dir("embeddings")).glob("*.npy"))
    assert len(files) == 1

    def no_encoding(*a, **kw):
        raise AssertionError("pool embeddings should come from the .npy cache")

    monkeypatch.setattr(neg, "encode", no_encoding)
    second = neg.EmbeddingSampler(POOL)
    np.testing.assert_array_equal(first.pool_embeddings, second.pool_embeddings)


def test_embedding_model_must_be_local(tmp_path):
    with pytest.raises(DataError, match="not a local folder"):
        neg.make_sampler("embedding", POOL, model="sentence-transformers/some-hub-model")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name", ["random", "bm25"])
def test_k_too_large_is_a_data_error(name):
    s = neg.make_sampler(name, POOL)
    n = len(s.pool)
    with pytest.raises(DataError) as err:
        s.negatives(EXAMPLES[:2], n, seed=0)  # the true response is in the pool: only n - 1 possible
    msg = str(err.value)
    assert f"k={n}" in msg and str(n) in msg and name in msg and EXAMPLES[0].eid in msg
    # an example whose response is not in the pool can take the whole pool
    outsider = Example("out", ("hello?",), "A response that is not in the pool.")
    assert len(s.negatives([outsider], n, seed=0)[0]) == n


def test_k_below_one_and_bad_names():
    s = neg.make_sampler("random", POOL)
    with pytest.raises(ValueError, match="k must be"):
        s.negatives(EXAMPLES, 0, seed=0)
    with pytest.raises(ValueError, match="random, bm25, mixed, embedding"):
        neg.make_sampler("hard", POOL)
    with pytest.raises(TypeError, match="stopword"):
        neg.make_sampler("bm25", POOL, stopword="en")
    with pytest.raises(TypeError, match="k1"):
        neg.make_sampler("random", POOL, k1=1.2)
    assert isinstance(neg.make_sampler(neg.SamplerName.bm25, POOL, stopwords="en", k1=1.2), neg.BM25Sampler)
    with pytest.raises(DataError, match="empty"):
        neg.make_sampler("random", ["", "  "])


# --------------------------------------------------------------------------- queries


def test_build_queries_shapes_and_shuffle():
    qs = neg.build_queries(EXAMPLES, neg.make_sampler("bm25", POOL), K, seed=5)
    assert [q.qid for q in qs] == [e.eid for e in EXAMPLES]
    positions = set()
    for q, e in zip(qs, EXAMPLES):
        assert len(q.candidates) == K + 1 and q.labels.count(1) == 1
        pos = q.labels.index(1)
        assert q.candidates[pos] == e.response and q.context == e.context
        positions.add(pos)
    assert len(positions) > 1, "the relevant response should not always be at the same position"
    assert neg.build_queries(EXAMPLES, neg.make_sampler("bm25", POOL), K, seed=5) == qs


CACHE_ARGS = dict(corpus="toy", split="test", sampler="random", k=K, seed=11)


def test_cache_second_call_reads_file(monkeypatch):
    first = neg.cached_queries(EXAMPLES, **CACHE_ARGS)
    path = neg.queries_cache_path(EXAMPLES, **CACHE_ARGS)
    assert path.exists() and path.parent == neg.paths.cache_dir("negatives")

    def boom(*a, **kw):
        raise AssertionError("the sampler must not run when the cache file exists")

    monkeypatch.setattr(neg, "make_sampler", boom)
    second = neg.cached_queries(EXAMPLES, **CACHE_ARGS)
    assert second == first
    assert [q.candidates for q in second] == [q.candidates for q in first]
    assert [q.meta for q in second] == [q.meta for q in first]
    # default pool = the examples' own responses
    for q in first:
        assert all(c in {e.response for e in EXAMPLES} for c in q.candidates)


def test_cache_key_changes_with_inputs():
    base = neg.queries_cache_path(EXAMPLES, **CACHE_ARGS)
    changed = [
        neg.queries_cache_path(EXAMPLES, **{**CACHE_ARGS, "seed": 12}),
        neg.queries_cache_path(EXAMPLES, **{**CACHE_ARGS, "k": K + 1}),
        neg.queries_cache_path(EXAMPLES, **{**CACHE_ARGS, "sampler": "bm25"}),
        neg.queries_cache_path(EXAMPLES, **{**CACHE_ARGS, "split": "dev"}),
        neg.queries_cache_path(EXAMPLES, **CACHE_ARGS, params={"k1": 1.2}),
        neg.queries_cache_path(EXAMPLES, **CACHE_ARGS, pool=POOL),
        neg.queries_cache_path(EXAMPLES[:-1], **CACHE_ARGS),
        neg.queries_cache_path(
            [Example("food-0", ("changed context",), EXAMPLES[0].response)] + EXAMPLES[1:], **CACHE_ARGS
        ),
        neg.queries_cache_path(
            [Example("food-0", EXAMPLES[0].context, "changed response")] + EXAMPLES[1:], **CACHE_ARGS
        ),
    ]
    assert base not in changed and len(set(changed)) == len(changed)
    assert neg.queries_cache_path(list(EXAMPLES), **CACHE_ARGS) == base


def test_interrupted_cache_write_leaves_no_file(monkeypatch):
    args = {**CACHE_ARGS, "sampler": "bm25"}
    path = neg.queries_cache_path(EXAMPLES, **args)
    real_write = data_io.pq.write_table

    def half_write(table, where, *a, **kw):
        with open(where, "wb") as fh:
            fh.write(b"PAR1 half a file")
        raise KeyboardInterrupt("simulated crash mid-write")

    monkeypatch.setattr(data_io.pq, "write_table", half_write)
    with pytest.raises(KeyboardInterrupt):
        neg.cached_queries(EXAMPLES, **args)
    assert not path.exists()
    # the lock file stays (filelock keeps it: removing it would let two processes hold the lock)
    left = [p for p in path.parent.iterdir() if not p.name.endswith(".lock")]
    assert not left, "no temporary file should be left behind"

    monkeypatch.setattr(data_io.pq, "write_table", real_write)
    again = neg.cached_queries(EXAMPLES, **args)
    assert path.exists()
    expected = neg.build_queries(EXAMPLES, neg.make_sampler("bm25", [e.response for e in EXAMPLES]), K, 11)
    assert again == expected


def test_corrupt_cache_file_is_rebuilt():
    path = neg.queries_cache_path(EXAMPLES, **CACHE_ARGS)
    path.write_bytes(b"not parquet")
    qs = neg.cached_queries(EXAMPLES, **CACHE_ARGS)
    assert len(qs) == len(EXAMPLES) and data_io.read_queries(path) == qs


def test_bf16_embeddings_find_the_neighbours_of_fp32_ones(minilm):
    """The speed-up of bf16 autocast keeps the embedding negatives: neighbours agree with fp32."""
    import torch

    from calibrank.study.data.chatterbot import read_chatterbot

    probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    if probe is None or not probe():
        pytest.skip("no bf16 arithmetic on this CPU: precision auto is fp32 here")
    turns = [u for d in read_chatterbot(strict=False) for u in d.utterances]
    pool = sorted(set(turns))[:400]
    queries = pool[::4]
    exact = neg.encode(minilm, pool, precision="fp32")
    fast = neg.encode(minilm, pool, precision="bf16")
    assert not np.array_equal(exact, fast)  # bf16 really ran
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(exact * fast, axis=1)) > 0.98  # each text's two embeddings point the same way
    q32, q16 = neg.encode(minilm, queries, precision="fp32"), neg.encode(minilm, queries, precision="bf16")
    k = 10
    top32 = np.argsort(-(q32 @ exact.T), axis=1)[:, 1 : k + 1]  # column 0 is the query itself
    top16 = np.argsort(-(q16 @ fast.T), axis=1)[:, 1 : k + 1]
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(top32, top16)])
    assert overlap >= 0.85, overlap


# --------------------------------------------------------------------------- echoes, own dialogue, mixed


ECHO_EX = Example(
    eid="bread-3",
    context=("hi there", "What is your favorite type of bread?"),
    response="Probably a fresh sourdough loaf",
    dialogue_id="d-bread",
    domain="bread",
)
ECHO_POOL = [
    "What is your favorite kind of bread?",  # a near-copy of the last context turn (Jaccard 5/7)
    "what is your favorite bread",  # another near-copy (Jaccard 5/6)
    "I bake bread at home every weekend",  # about bread, but no echo
    "Rye bread is my favorite, what about you?",
    "My favorite type of music is jazz",
    "Probably a fresh sourdough loaf",
] + DISTRACTORS


@pytest.mark.parametrize("name", ["random", "bm25", "mixed", "embedding"])
def test_near_copies_of_a_context_turn_are_never_negatives(name, minilm):
    smp = neg.make_sampler(name, ECHO_POOL, max_context_jaccard=0.5)
    ctx = [neg.word_set(t) for t in ECHO_EX.context]
    for seed in range(5):
        (ns,) = smp.negatives([ECHO_EX], 4, seed=seed)
        assert all(max(neg.jaccard(neg.word_set(n), c) for c in ctx) < 0.5 for n in ns), ns
    assert smp.stats.get("n_echo_fallback", 0) == 0


def test_bm25_takes_near_copies_when_the_echo_rule_is_off():
    """Without the rule the near-copies are BM25's best matches: the rule, not chance, removes them."""
    (ns,) = neg.make_sampler("bm25", ECHO_POOL, max_context_jaccard=None).negatives([ECHO_EX], 2, seed=0)
    assert set(ns) == {"What is your favorite kind of bread?", "what is your favorite bread"}
    (ns,) = neg.make_sampler("bm25", ECHO_POOL, max_context_jaccard=0.5).negatives([ECHO_EX], 2, seed=0)
    assert not set(ns) & {"What is your favorite kind of bread?", "what is your favorite bread"}


def test_turns_of_the_examples_own_dialogue_are_never_negatives():
    pool = ["I bake bread at home every weekend", "Rye bread is my favorite, what about you?", *DISTRACTORS]
    dialogues = ["d-bread", "d-other"] + ["d-x"] * len(DISTRACTORS)
    smp = neg.make_sampler("bm25", pool, pool_dialogues=dialogues)
    (ns,) = smp.negatives([ECHO_EX], 3, seed=0)
    assert "I bake bread at home every weekend" not in ns and "Rye bread is my favorite, what about you?" in ns
    off = neg.make_sampler("bm25", pool, pool_dialogues=dialogues, exclude_own_dialogue=False)
    assert "I bake bread at home every weekend" in off.negatives([ECHO_EX], 3, seed=0)[0]
    with pytest.raises(ValueError, match="one dialogue id per pool entry"):
        neg.make_sampler("bm25", pool, pool_dialogues=dialogues[:-1])


def test_a_pool_of_echoes_alone_still_yields_k_negatives_and_counts_the_fallback():
    pool = ["What is your favorite kind of bread?", "what is your favorite bread", "Probably a fresh sourdough loaf"]
    smp = neg.make_sampler("random", pool, max_context_jaccard=0.5)
    (ns,) = smp.negatives([ECHO_EX], 2, seed=0)
    assert len(ns) == 2 and smp.stats["n_echo_fallback"] == 2


def test_mixed_sampler_draws_bm25_negatives_at_its_share():
    exs = EXAMPLES
    all_bm25 = neg.make_sampler("bm25", POOL).negatives(exs, 1, seed=3)
    for share, lo, hi in ((0.0, 0, 0), (1.0, len(exs), len(exs)), (0.5, 0.25 * len(exs), 0.75 * len(exs))):
        smp = neg.make_sampler("mixed", POOL, bm25_share=share)
        negs = smp.negatives(exs, 1, seed=3)
        _check_invariants(exs, negs, 1)
        assert lo <= smp.stats["n_bm25"] <= hi
        same = sum(a == b for a, b in zip(negs, all_bm25))
        assert same >= smp.stats["n_bm25"]  # a context given a BM25 negative gets BM25's top hit
    assert neg.make_sampler("mixed", POOL, bm25_share=1.0).negatives(exs, 1, seed=3) == all_bm25
    with pytest.raises(ValueError, match="bm25_share"):
        neg.make_sampler("mixed", POOL, bm25_share=1.5)
