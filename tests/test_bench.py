"""The benchmark functions on tiny inputs: result structure and parity of the implementations (no timing checks)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from calibrank import bench  # noqa: E402

K = 5


@pytest.fixture(autouse=True)
def _isolated_root(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def workload():
    responses, contexts, info = bench.chitchat_workload(300, 40, seed=1)
    return responses, [" ".join(c[-2:]) for c in contexts], info


def test_chitchat_workload(workload):
    responses, queries, info = workload
    assert len(responses) == 300 and len(queries) == 40
    assert len({r.casefold() for r in responses}) == 300
    assert info["corpus"] == "chitchat" and info["queries_from_pool_examples"] is False


def test_bench_bm25_structure_and_parity(workload):
    responses, queries, _ = workload
    res = bench.bench_bm25(responses, queries, K)
    assert res["n_responses"] == 300 and res["n_queries"] == 40 and res["k"] == K
    for impl, keys in {"bm25s": ("index_s", "retrieve_s", "total_s", "per_query_ms"), "rank_bm25": ("index_s", "search_s", "total_s", "per_query_ms")}.items():
        for key in keys:
            assert isinstance(res[impl][key], float) and res[impl][key] >= 0, (impl, key)
    assert res["speedup_total"] > 0 and res["speedup_per_query"] > 0
    par = res["parity"]
    # same Okapi formula (bm25s method="robertson"): the top-1 agrees except for exact ties
    assert par["n_terms_floored_by_rank_bm25"] == 0
    assert par["top1_agree"] >= 0.8
    assert par["top1_agree_up_to_ties"] == 1.0
    assert par["topk_overlap"] >= 0.8
    assert par["top1_max_rel_score_diff"] < 1e-4
    json.dumps(res)  # serialisable as is


def test_bm25_implementations_give_the_same_scores(workload):
    """BM25Okapi's scores are bm25s' robertson scores times (k1 + 1), rank by rank."""
    responses, queries, _ = workload
    docs, qs = bench.tokenize(responses), bench.tokenize(queries)
    _, b_scores, *_ = bench.bm25s_topk(docs, qs, K, k1=1.2, b=0.7)
    _, r_scores, *_ = bench.rank_bm25_topk(docs, qs, K, k1=1.2, b=0.7)
    np.testing.assert_allclose(b_scores * (1.2 + 1), r_scores, rtol=1e-5, atol=1e-6)


def test_bm25_idf_variants_differ_for_very_common_terms():
    """A term in more than half of the documents: bm25s clips its idf to 0, BM25Okapi floors it to a positive value."""
    docs = [["hello", "world"], ["hello", "there"], ["hello", "cat"], ["dog", "bone"]]
    b_ids, b_scores, *_ = bench.bm25s_topk(docs, [["hello"]], 4)
    r_ids, r_scores, _, _, okapi = bench.rank_bm25_topk(docs, [["hello"]], 4)
    assert np.all(b_scores == 0)
    assert r_scores[0, 0] > 0 and okapi.idf["hello"] == pytest.approx(okapi.epsilon * okapi.average_idf)


def test_faiss_and_numpy_agree_exactly():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((400, 32)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.standard_normal((30, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    f_ids, f_scores, *_ = bench.faiss_topk(emb, q, 10)
    n_ids, n_scores, _ = bench.numpy_topk(emb, q, 10, chunk=7)  # chunking must not matter
    np.testing.assert_array_equal(f_ids, n_ids)
    np.testing.assert_allclose(f_scores, n_scores, atol=1e-5)
    brute = np.argsort(-(q @ emb.T), axis=1)[:, :10]
    np.testing.assert_array_equal(n_ids, brute)

    res = bench.bench_embedding(emb, q, 10, repeats=2)
    assert res["n_responses"] == 400 and res["n_queries"] == 30 and res["dim"] == 32 and res["k"] == 10
    assert res["parity"]["topk_ids_identical"] == 1.0 and res["parity"]["max_abs_score_diff"] < 1e-5
    for key in ("index_s", "search_s", "per_query_ms"):
        assert res["faiss"][key] >= 0
    assert res["numpy"]["search_s"] >= 0 and res["speedup_search"] > 0
    json.dumps(res)


def test_write_results_merges_and_renders(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "bench.json").write_text(json.dumps({"ranker_inference": {"batch": 32, "per_query_ms": 1.5}, "negatives_bm25": {"old": 1}}))
    merged = bench.write_results(out, {"negatives_bm25": {"n_queries": 3, "bm25s": {"total_s": 0.25}}, "negatives_embedding": {"k": 10}})
    on_disk = json.loads((out / "bench.json").read_text())
    assert on_disk == merged
    assert on_disk["ranker_inference"] == {"batch": 32, "per_query_ms": 1.5}
    assert on_disk["negatives_bm25"] == {"n_queries": 3, "bm25s": {"total_s": 0.25}}
    md = (out / "bench.md").read_text()
    for line in ("## ranker_inference", "## negatives_bm25", "## negatives_embedding", "| bm25s.total_s | 0.25 |", "| per_query_ms | 1.5 |"):
        assert line in md
    assert sorted(p.name for p in out.iterdir()) == ["bench.json", "bench.md"]


def test_main_end_to_end_tiny(tmp_path):
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--n-responses", "200", "--n-queries", "10", "--n-embed", "60", "--k", "5"]) == 0
    res = json.loads((out / "bench.json").read_text())
    assert set(res) == {"negatives_bm25", "negatives_embedding"}
    assert res["negatives_bm25"]["n_responses"] == 200 and res["negatives_bm25"]["machine"]["cpu_count"] == os.cpu_count()
    emb = res["negatives_embedding"]
    assert emb["n_embed"] == emb["n_responses"] == 60 and emb["encode_from_cache"] is False
    assert emb["parity"]["topk_identical_up_to_ties"] == 1.0
    # a rerun reads the cached encodings
    bench.main(["--out", str(out), "--n-responses", "200", "--n-queries", "10", "--n-embed", "60", "--k", "5", "--skip", "bm25"])
    assert json.loads((out / "bench.json").read_text())["negatives_embedding"]["encode_from_cache"] is True
