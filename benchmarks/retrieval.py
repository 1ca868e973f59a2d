"""``negatives_bm25`` and ``negatives_embedding``: the retrieval behind the negative samplers.

On real chit-chat data (the first N unique responses of the corpus as the pool, the contexts of
*other* examples as queries; :func:`chitchat_workload`) it measures:

- ``negatives_bm25`` (:func:`bench_bm25`): top-k BM25 with ``bm25s`` (index + batch retrieve)
  against ``rank_bm25``'s ``BM25Okapi`` (index + ``get_scores`` + top-k), same tokens for both;
  times, per-query times, the speed-up and a parity check. bm25s runs with ``method="robertson"``,
  the formula of BM25Okapi: both use idf = log((N - df + .5) / (df + .5)); they differ only for
  terms in more than half of the documents (negative idf: bm25s clips it to 0, BM25Okapi floors it
  to ``0.25 * mean idf``) and by the constant factor (k1 + 1) that BM25Okapi puts on every term
  (no effect on rankings).
- ``negatives_embedding`` (:func:`bench_embedding`): exact inner-product top-k with
  ``faiss.IndexFlatIP`` against numpy (matrix product + argpartition + sort of the top k), on the
  same MiniLM embeddings.

Both benchmark functions work on any small input, for tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

__all__ = [
    "SECTION_BM25",
    "SECTION_EMBEDDING",
    "tokenize",
    "bm25s_topk",
    "rank_bm25_topk",
    "bench_bm25",
    "faiss_topk",
    "numpy_topk",
    "bench_embedding",
    "chitchat_workload",
]

SECTION_BM25 = "negatives_bm25"
SECTION_EMBEDDING = "negatives_embedding"
_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def _ms(seconds: float, n: int) -> float:
    return 1000.0 * seconds / max(n, 1)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------- BM25


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """The tokens both BM25 implementations get: bm25s' tokeniser, lower-cased ``\\w\\w+``, no stopword removal."""
    import bm25s

    return bm25s.tokenize(
        list(texts), lower=True, token_pattern=_TOKEN_PATTERN, stopwords=None, return_ids=False, show_progress=False
    )


def bm25s_topk(corpus_tokens, query_tokens, k: int, *, k1: float = 1.5, b: float = 0.75, method: str = "robertson"):
    """(ids, scores, index_s, retrieve_s): bm25s top-k, rows sorted by decreasing score."""
    import bm25s

    k = min(k, len(corpus_tokens))
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(corpus_tokens, show_progress=False)
    t1 = time.perf_counter()
    ids, scores = retriever.retrieve(list(query_tokens), k=k, show_progress=False, n_threads=0)
    t2 = time.perf_counter()
    return np.asarray(ids), np.asarray(scores), t1 - t0, t2 - t1


def rank_bm25_topk(corpus_tokens, query_tokens, k: int, *, k1: float = 1.5, b: float = 0.75):
    """(ids, scores, index_s, search_s, bm25): rank_bm25 BM25Okapi top-k via get_scores + argpartition."""
    from rank_bm25 import BM25Okapi

    k = min(k, len(corpus_tokens))
    t0 = time.perf_counter()
    bm25 = BM25Okapi(corpus_tokens, k1=k1, b=b)
    t1 = time.perf_counter()
    ids = np.empty((len(query_tokens), k), dtype=np.int64)
    scores = np.empty((len(query_tokens), k), dtype=np.float64)
    for i, q in enumerate(query_tokens):
        s = bm25.get_scores(q)
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        ids[i], scores[i] = top, s[top]
    t2 = time.perf_counter()
    return ids, scores, t1 - t0, t2 - t1, bm25


def bench_bm25(
    responses: Sequence[str], queries: Sequence[str], k: int = 10, *, k1: float = 1.5, b: float = 0.75
) -> dict[str, Any]:
    """Time top-k BM25 retrieval of ``queries`` (texts) over ``responses`` with bm25s and rank_bm25."""
    t0 = time.perf_counter()
    corpus_tokens = tokenize(responses)
    query_tokens = tokenize(queries)
    tokenise_s = time.perf_counter() - t0
    nq = len(query_tokens)

    b_ids, b_scores, b_index, b_search = bm25s_topk(corpus_tokens, query_tokens, k, k1=k1, b=b)
    r_ids, r_scores, r_index, r_search, okapi = rank_bm25_topk(corpus_tokens, query_tokens, k, k1=k1, b=b)

    # Parity. A query can have several documents tied at the top score; "up to ties" counts
    # bm25s' top-1 as agreeing when rank_bm25 gives it the same (maximal) score.
    strict = ties = 0
    overlap, rel_diff = [], []
    for i, q in enumerate(query_tokens):
        strict += int(b_ids[i, 0] == r_ids[i, 0])
        r_at_b = float(okapi.get_batch_scores(q, [int(b_ids[i, 0])])[0]) if q else 0.0
        ties += int(abs(r_at_b - r_scores[i, 0]) <= 1e-5 * max(1.0, abs(r_scores[i, 0])))
        overlap.append(len(set(b_ids[i].tolist()) & set(r_ids[i].tolist())) / b_ids.shape[1])
        if r_at_b > 0:
            rel_diff.append(abs(float(b_scores[i, 0]) * (k1 + 1) - r_at_b) / r_at_b)
    eps = okapi.epsilon * okapi.average_idf  # BM25Okapi sets every negative idf to exactly this
    n_neg_idf = sum(1 for v in okapi.idf.values() if v == eps)
    return {
        "n_responses": len(responses),
        "n_queries": nq,
        "k": int(b_ids.shape[1]) if nq else k,
        "mean_query_tokens": float(np.mean([len(q) for q in query_tokens])) if nq else 0.0,
        "mean_response_tokens": float(np.mean([len(d) for d in corpus_tokens])) if corpus_tokens else 0.0,
        "tokenise_s": tokenise_s,
        "bm25s": {
            "version": _version("bm25s"),
            "method": "robertson",
            "backend": "numpy, n_threads=0",
            "index_s": b_index,
            "retrieve_s": b_search,
            "total_s": b_index + b_search,
            "per_query_ms": _ms(b_search, nq),
        },
        "rank_bm25": {
            "version": _version("rank-bm25"),
            "class": "BM25Okapi",
            "index_s": r_index,
            "search_s": r_search,
            "total_s": r_index + r_search,
            "per_query_ms": _ms(r_search, nq),
        },
        "speedup_total": (r_index + r_search) / max(b_index + b_search, 1e-12),
        "speedup_per_query": r_search / max(b_search, 1e-12),
        "parity": {
            "top1_agree": strict / max(nq, 1),
            "top1_agree_up_to_ties": ties / max(nq, 1),
            "topk_overlap": float(np.mean(overlap)) if overlap else 1.0,
            "top1_max_rel_score_diff": float(max(rel_diff)) if rel_diff else 0.0,
            "n_terms_floored_by_rank_bm25": int(n_neg_idf),
        },
        "note": "same tokens; bm25s method=robertson = BM25Okapi's idf log((N-df+.5)/(df+.5)); they differ only for "
        "terms in >50% of documents (bm25s: idf 0, BM25Okapi: 0.25*mean idf) and by BM25Okapi's constant factor k1+1",
    }


# --------------------------------------------------------------------------- embeddings


def faiss_topk(responses_emb: np.ndarray, queries_emb: np.ndarray, k: int):
    """(ids, scores, index_s, search_s): exact inner-product top-k with faiss.IndexFlatIP."""
    import faiss

    k = min(k, len(responses_emb))
    t0 = time.perf_counter()
    index = faiss.IndexFlatIP(responses_emb.shape[1])
    index.add(np.ascontiguousarray(responses_emb, dtype=np.float32))
    t1 = time.perf_counter()
    scores, ids = index.search(np.ascontiguousarray(queries_emb, dtype=np.float32), k)
    t2 = time.perf_counter()
    return ids.astype(np.int64), scores, t1 - t0, t2 - t1


def numpy_topk(responses_emb: np.ndarray, queries_emb: np.ndarray, k: int, chunk: int = 1024):
    """(ids, scores, search_s): the same search in numpy (matrix product, argpartition, sort of the top k)."""
    k = min(k, len(responses_emb))
    r = np.ascontiguousarray(responses_emb, dtype=np.float32)
    q = np.ascontiguousarray(queries_emb, dtype=np.float32)
    ids = np.empty((len(q), k), dtype=np.int64)
    scores = np.empty((len(q), k), dtype=np.float32)
    t0 = time.perf_counter()
    for start in range(0, len(q), chunk):
        sims = q[start : start + chunk] @ r.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        top_s = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_s, axis=1, kind="stable")
        ids[start : start + chunk] = np.take_along_axis(top, order, axis=1)
        scores[start : start + chunk] = np.take_along_axis(top_s, order, axis=1)
    return ids, scores, time.perf_counter() - t0


def bench_embedding(
    responses_emb: np.ndarray, queries_emb: np.ndarray, k: int = 10, repeats: int = 3
) -> dict[str, Any]:
    """Time exact top-k inner-product search with faiss IndexFlatIP and with numpy on the same embeddings.

    Each search runs ``repeats`` times after an untimed warm-up (thread pools, caches); the best time counts.
    """
    import faiss

    faiss_topk(responses_emb, queries_emb[:1], k)
    numpy_topk(responses_emb, queries_emb[:1], k)
    f_runs = [faiss_topk(responses_emb, queries_emb, k) for _ in range(max(repeats, 1))]
    n_runs = [numpy_topk(responses_emb, queries_emb, k) for _ in range(max(repeats, 1))]
    f_ids, f_scores = f_runs[0][:2]
    n_ids, n_scores = n_runs[0][:2]
    f_index, f_search = min(r[2] for r in f_runs), min(r[3] for r in f_runs)
    n_search = min(r[2] for r in n_runs)
    nq = len(queries_emb)
    identical = [bool(np.array_equal(a, b)) for a, b in zip(f_ids, n_ids)]
    # up to ties: the same scores in the same order (equal-scored documents may swap)
    same_scores = [bool(np.allclose(a, b, rtol=0, atol=1e-5)) for a, b in zip(f_scores, n_scores)]
    return {
        "n_responses": int(len(responses_emb)),
        "n_queries": int(nq),
        "dim": int(responses_emb.shape[1]),
        "k": int(f_ids.shape[1]) if nq else k,
        "repeats": max(repeats, 1),
        "faiss": {
            "version": _version("faiss-cpu"),
            "index": "IndexFlatIP",
            "omp_threads": int(faiss.omp_get_max_threads()),
            "index_s": f_index,
            "search_s": f_search,
            "total_s": f_index + f_search,
            "per_query_ms": _ms(f_search, nq),
        },
        "numpy": {
            "version": np.__version__,
            "method": "matmul + argpartition + sort top-k",
            "search_s": n_search,
            "per_query_ms": _ms(n_search, nq),
        },
        "speedup_search": n_search / max(f_search, 1e-12),
        "speedup_total": n_search / max(f_index + f_search, 1e-12),
        "parity": {
            "topk_ids_identical": float(np.mean(identical)) if nq else 1.0,
            "topk_identical_up_to_ties": float(np.mean([i or s for i, s in zip(identical, same_scores)]))
            if nq
            else 1.0,
            "max_abs_score_diff": float(np.max(np.abs(f_scores - n_scores))) if nq else 0.0,
        },
    }


# --------------------------------------------------------------------------- workload


def chitchat_workload(
    n_responses: int, n_queries: int, seed: int = 0
) -> tuple[list[str], list[tuple[str, ...]], dict[str, Any]]:
    """The first ``n_responses`` unique responses of the chitchat corpus and ``n_queries`` contexts of other examples."""
    from calibrank.study.data.chitchat import read_chitchat
    from calibrank.study.data.schema import normalise_text

    pairs = [(d.utterances[:i], d.utterances[i]) for d in read_chitchat() for i in range(1, len(d.utterances))]
    seen: set[str] = set()
    responses: list[str] = []
    for _, resp in pairs:
        norm = normalise_text(resp)
        if norm not in seen and len(responses) < n_responses:
            seen.add(norm)
            responses.append(resp)
    others = [ctx for ctx, resp in pairs if normalise_text(resp) not in seen]
    overlap = len(others) < n_queries
    source = [ctx for ctx, _ in pairs] if overlap else others
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(source), size=min(n_queries, len(source)), replace=False)
    contexts = [source[int(i)] for i in sorted(picked)]
    info = {"corpus": "chitchat", "n_pairs": len(pairs), "queries_from_pool_examples": overlap, "query_seed": seed}
    return responses, contexts, info
