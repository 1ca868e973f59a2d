"""training.joint_layers: lower layers within each segment, top layers across the pair (PreTTR, DC-BERT)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibrank.metrics.ranking import recall_at_k
from calibrank.pairs import collate
from calibrank.predictions import Predictions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.backbone import encode, load_backbone
from calibrank.study.model.cross_encoder import SEGMENT_COSINE_BIAS, SEGMENT_COSINE_WEIGHT, CrossEncoder
from calibrank.study.model.training import encode_pairs
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import TrainingConfig
from rankfix import learnable_queries, tiny_run

CLS, SEP = 101, 102


def _batch(responses):
    """``[CLS] ctx [SEP] resp [SEP]`` rows (one fixed context, different responses), right-padded as collate pads."""
    ctx = [2023, 2003, 1037, 6123]
    rows = [[CLS, *ctx, SEP, *r, SEP] for r in responses]
    types = [[0] * (len(ctx) + 2) + [1] * (len(r) + 1) for r in responses]
    width = max(map(len, rows))
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    tt = torch.tensor([t + [0] * (width - len(t)) for t in types])
    return ids, (ids > 0).long(), tt


def _tiny(joint_layers, attn="sdpa", pooling="segments"):
    bb = load_backbone("tiny-random", seed=5, joint_layers=joint_layers)
    bb.encoder.set_attn_implementation(attn)
    return CrossEncoder(bb, pooling=pooling, seed=5).eval(), bb


def _layer_outputs(model, *batch):
    """The hidden states after each encoder layer ``[n_layers][B, W', d]``."""
    seen = []
    hooks = [
        layer.register_forward_hook(lambda m, i, o: seen.append(o.detach().clone()))
        for layer in model.encoder.encoder.layer
    ]
    try:
        with torch.no_grad():
            model(*batch)
    finally:
        for h in hooks:
            h.remove()
    return seen


@pytest.mark.parametrize("pooling", ["segments", "pooler", "mean"])
def test_null_is_the_encoders_own_forward_and_all_layers_joint_gives_the_same_logits(pooling):
    ids, am, tt = _batch([[3000, 3001, 3002], [3003], [3004, 3005, 3006, 3007, 3008]])
    null, bb = _tiny(None, pooling=pooling)
    with torch.no_grad():
        logits = null(ids, am, tt)
        out = bb.encoder(input_ids=ids, attention_mask=am, token_type_ids=tt)
    # oracle for the unchanged model: the head on what the encoder's own forward gives
    if pooling == "pooler":
        expected = null.head(out.pooler_output).squeeze(-1)
    else:
        h = out.last_hidden_state
        feats = []
        for i in range(len(ids)):
            if pooling == "mean":
                feats.append(h[i, am[i] == 1].mean(0))
                continue
            u = h[i, (tt[i] == 0) & (am[i] == 1)].mean(0)
            v = h[i, (tt[i] == 1) & (am[i] == 1)].mean(0)
            u, v = u / u.norm(), v / v.norm()
            feats.append(u * v * np.sqrt(u.numel()))
        expected = null.head(torch.stack(feats)).squeeze(-1)
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-6)
    # every layer joint, run layer by layer here: bit for bit the same numbers
    every, _ = _tiny(2, pooling=pooling)
    with torch.no_grad():
        assert torch.equal(every(ids, am, tt), logits)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_lower_layers_never_attend_across_context_and_response(attn):
    a = _batch([[3000, 3001, 3002], [3003, 3004]])
    b = _batch([[4000, 4001, 4002], [4003, 4004]])  # the same context, other responses of the same lengths
    n_ctx = 6  # [CLS] + 4 context tokens + [SEP]
    for joint, separate in ((0, 2), (1, 1)):
        model, _ = _tiny(joint, attn)
        la, lb = _layer_outputs(model, *a), _layer_outputs(model, *b)
        for layer in range(separate):  # below the joint layers the context does not see the response
            torch.testing.assert_close(la[layer][:, :n_ctx], lb[layer][:, :n_ctx], rtol=0, atol=1e-6)
        if joint:  # a joint layer does: the control that the comparison can fail
            assert not torch.allclose(la[-1][:, :n_ctx], lb[-1][:, :n_ctx], atol=1e-3)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_with_no_joint_layer_each_segment_is_encoded_as_if_alone(attn):
    responses = [[3000, 3001, 3002], [3003], [3004, 3005, 3006, 3007, 3008]]
    ids, am, tt = _batch(responses)
    model, bb = _tiny(0, attn)
    with torch.no_grad():
        out = encode(bb.encoder, ids, am, tt, joint_layers=0)
        ctx_alone = bb.encoder(input_ids=ids[:1, :6]).last_hidden_state[0]
    assert out.hidden.shape[1] == ids.shape[1] + 1  # the response's own [CLS]
    for i, r in enumerate(responses):
        resp = out.token_type_ids[i].bool() & out.attention_mask[i].bool()
        with torch.no_grad():
            alone = bb.encoder(input_ids=torch.tensor([[CLS, *r, SEP]])).last_hidden_state[0]
        torch.testing.assert_close(out.hidden[i, resp], alone, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out.hidden[i, :6], ctx_alone, rtol=1e-5, atol=1e-5)
        assert int(resp.sum()) == len(r) + 2 and int(out.attention_mask[i].sum()) == int(am[i].sum()) + 1


def test_untrained_segments_ranker_with_no_joint_layer_ranks_as_the_zero_shot_biencoder():
    """MiniLM with no joint layer and the segments head: 10 cos + b of sentence-transformers' embeddings."""
    from calibrank.study.data.baselines import baseline_scores

    queries = [
        RankingQuery(
            "pets",
            ("what pets do you have at home?",),
            (
                "i have two cats and a parrot",
                "i work as a nurse",
                "the weather is terrible today",
                "my favourite food is pizza",
            ),
            (1, 0, 0, 0),
        ),
        RankingQuery(
            "job",
            ("tell me about your job",),
            (
                "i like hiking with my dog",
                "i teach maths at a school",
                "do you have any pets?",
                "that sounds like fun!",
            ),
            (0, 1, 0, 0),
        ),
        RankingQuery(
            "rain",
            ("how is the weather where you are?", "it is sunny here"),
            ("i love pizza", "it has been raining all week", "i am a student", "music is my life"),
            (0, 1, 0, 0),
        ),
        RankingQuery(
            "food",
            ("what do you usually eat for dinner",),
            ("mostly pasta and salad", "my dog is called rex", "i live in berlin", "my favourite band is queen"),
            (1, 0, 0, 0),
        ),
    ]
    rule = baseline_scores("biencoder", queries, seed=0, model="all-MiniLM-L6-v2")
    bb = load_backbone("all-MiniLM-L6-v2", joint_layers=0)
    model = CrossEncoder(bb, pooling="segments").eval()
    pairs = encode_pairs(bb.tokenizer, queries, max_length=96, max_response_length=32)
    with torch.no_grad():
        logits = model(**collate(pairs, np.arange(len(pairs)))).numpy().reshape(rule.shape)
    # the two-utterance context is read in a different order by the rule (newest first): compare the others exactly
    one = [i for i, q in enumerate(queries) if len(q.context) == 1]
    np.testing.assert_allclose((logits[one] - SEGMENT_COSINE_BIAS) / SEGMENT_COSINE_WEIGHT, rule[one], atol=1e-5)
    assert np.corrcoef(logits.ravel(), rule.ravel())[0, 1] > 0.97
    labels = np.array([q.labels for q in queries])
    assert np.array_equal(recall_at_k(logits, labels, 1), recall_at_k(rule, labels, 1))
    # the papers' cross-encoder starts elsewhere: the same weights with every layer joint
    full = CrossEncoder(load_backbone("all-MiniLM-L6-v2"), pooling="segments").eval()
    with torch.no_grad():
        joint = full(**collate(pairs, np.arange(len(pairs)))).numpy().reshape(rule.shape)
    assert np.abs((joint[one] - SEGMENT_COSINE_BIAS) / SEGMENT_COSINE_WEIGHT - rule[one]).max() > 0.05


def test_joint_layers_are_checked_in_the_profile_and_where_the_encoder_is_built(tmp_path):
    def profile(training: str, pooling: str = "segments") -> str:
        path = tmp_path / "x.yaml"
        path.write_text(f"profile: x\ntraining:\n  backbone: all-MiniLM-L6-v2\n  pooling: {pooling}\n{training}")
        return str(path)

    assert load_config(profile("  joint_layers: 2\n")).training.joint_layers == 2
    assert load_config(profile("")).training.joint_layers is None
    for value, expected in (
        ("7", "0..6 (all-MiniLM-L6-v2 has 6 encoder layers), got 7"),
        ("-1", "an integer >= 0, got -1"),
        ("two", "expected an integer or null, got 'two'"),
        ("1.5", "got 1.5"),
    ):
        with pytest.raises(ConfigError) as err:
            load_config(profile(f"  joint_layers: {value}\n"))
        assert (
            f"{tmp_path / 'x.yaml'}:line " in str(err.value)
            and ": training.joint_layers: " in str(err.value)
            and expected in str(err.value)
        )
    with pytest.raises(ConfigError, match="training.joint_layers: 0 joint layers with pooling 'pooler'"):
        load_config(profile("  joint_layers: 0\n", pooling="pooler"))
    with pytest.raises(ConfigError, match=r"^joint_layers: expected null or 0\.\.2 \(tiny-random has 2"):
        TrainingConfig(backbone="tiny-random", joint_layers=3).check()
    # a backbone the profile check does not know is checked when its encoder is loaded
    with pytest.raises(ConfigError, match=r"training.joint_layers: expected null or 0\.\.2 .* got 3"):
        load_backbone("tiny-random", joint_layers=3)
    with pytest.raises(ConfigError, match="pooler"):
        CrossEncoder(load_backbone("tiny-random", joint_layers=0), pooling="pooler")


def test_known_layer_counts_are_the_loaded_encoders():
    from calibrank.study.settings.schema import BACKBONE_LAYERS

    for name in ("tiny-random", "all-MiniLM-L6-v2"):
        assert load_backbone(name).encoder.config.num_hidden_layers == BACKBONE_LAYERS[name]


def test_model_cache_key_names_joint_layers_only_when_set(tmp_path, monkeypatch):
    from calibrank.study.model.rankers import keys, make_ranker

    seen = []
    real = keys.stable_hash
    monkeypatch.setattr(keys, "stable_hash", lambda obj, *a: (seen.append(obj), real(obj, *a))[1])
    queries = learnable_queries(4, 1, seed=0)
    keys = [
        make_ranker("bert", tiny_run(tmp_path, joint_layers=j)).model_dirs(queries)[0].name for j in (None, 0, 1, 2)
    ]
    parts = [p for p in seen if isinstance(p, dict) and "training" in p]
    assert "joint_layers" not in parts[0]["training"]  # a default model keeps the key it had before the option
    assert [p["training"]["joint_layers"] for p in parts[1:]] == [0, 1, 2]
    assert len(set(keys)) == 4


@pytest.mark.parametrize("name", ["bert", "mc_dropout", "sngp", "pg_drr"])
def test_rankers_train_and_predict_with_separate_lower_layers(tmp_path, name):
    """Every family reads ``features``: with one joint layer of two the rankers train, and MC Dropout's
    per-query masks cover the response's extra [CLS] at the longest width."""
    from calibrank.study.model.rankers import make_ranker

    train, valid, test = (
        learnable_queries(32, 1, seed=0),
        learnable_queries(8, 3, seed=1),
        learnable_queries(8, 3, seed=2),
    )
    kw = {"passes": 2} if name == "mc_dropout" else {"samples": 4} if name in ("sngp", "pg_drr") else {}
    if name == "sngp":
        kw["spectral_norm"] = "none"
    if name == "pg_drr":
        kw.update(inducing=16, gibbs_chains=4, gibbs_steps=2)
    run = tiny_run(tmp_path, seed=1, epochs=1, joint_layers=1, pooling="segments", max_length=16, max_response_length=8)
    ranker = make_ranker(name, run, **kw).fit(train, valid)
    pred = ranker.predict(test)
    assert pred.probs.shape == (8, 4) and np.isfinite(pred.samples).all()
    assert (
        max(
            len(x)
            for x in encode_pairs(
                ranker.trained.backbone.tokenizer, test, max_length=16, max_response_length=8
            ).input_ids
        )
        == 16
    )  # a full-width batch was scored


def test_probe_trains_each_setting_at_equal_steps_beside_the_biencoder_on_the_same_queries(tmp_root, capsys):
    """``python -m benchmarks.probe_joint`` end to end on a cut-down smoke profile (2-layer tiny BERT)."""
    import json

    import pandas as pd

    from benchmarks.probe_joint import COLUMNS, main

    (tmp_root / "params" / "probe.yaml").write_text(
        "extends: smoke\nprofile: probe\ndata: {max_examples: {train: 16, valid: 8, test: 8}}\n"
        "negatives: {eval: [mixed, random]}\n"
    )
    out = tmp_root / "probe-out"
    argv = [
        "probe",
        "--joint-layers",
        "0",
        "2",
        "null",
        "--heads",
        "segments",
        "pooler",
        "--seeds",
        "3",
        "--train-examples",
        "12",
        "--resamples",
        "100",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert "query sets built" in capsys.readouterr().out
    table = pd.read_csv(out / "joint_layers.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns) == COLUMNS
    skipped = table[table["stage"].isna()]
    assert skipped[["joint_layers", "head"]].values.tolist() == [["0", "pooler"]]
    assert "could not depend on the response" in skipped["note"].iloc[0]
    rows = table[table["stage"].notna()]
    assert len(rows) == 5 * 2 * 4  # settings x (start, trained) x (2 corpora x 2 samplers)
    assert set(rows["shift"]) == {"in distribution", "cross-NS", "cross-domain", "cross-domain + cross-NS"}
    assert (rows["queries"] == 8).all()
    # the bi-encoder is scored once per condition: the same numbers beside every setting
    assert (rows.groupby(["corpus", "sampler"])["biencoder R@1"].nunique() == 1).all()
    assert ((rows["R@1 low"] <= rows["R@1"] + 1e-9) & (rows["R@1"] <= rows["R@1 high"] + 1e-9)).all()
    np.testing.assert_allclose(rows["diff"], rows["R@1"] - rows["biencoder R@1"], atol=1e-3)
    assert (rows["above_biencoder_interval"] == (rows["R@1"] > rows["biencoder high"])).all()
    trained = rows[rows["stage"] == "trained"]
    assert trained["steps"].nunique() == 1 and trained["steps"].iloc[0] > 0  # equal steps for every setting
    # every layer joint through the layer-by-layer path trains to the numbers of the encoder's own forward
    key = ["head", "stage", "corpus", "sampler"]
    every = rows[rows["joint_layers"] == "2"].set_index(key)["R@1"].sort_index()
    null = rows[rows["joint_layers"] == "null"].set_index(key)["R@1"].sort_index()
    pd.testing.assert_series_equal(every, null)
    assert json.loads((out / "run.json").read_text())["seeds"] == [3]
    assert "| bert | 0 | segments | 3 | trained |" in (out / "summary.md").read_text()
    assert set(rows["ranker"]) == {"bert"}
    # a second run reads the query sets and the trained models back, and saves what it scored
    saved = tmp_root / "probe-predictions"
    assert main(argv[:2] + ["0", "--heads", "segments"] + argv[8:] + ["--predictions", str(saved)]) == 0
    assert "query sets reused" in capsys.readouterr().out
    again = pd.read_csv(out / "joint_layers.csv")
    first = rows[(rows["joint_layers"] == "0") & (rows["head"] == "segments")]
    np.testing.assert_allclose(again["R@1"], first["R@1"])
    np.testing.assert_allclose(again["train_seconds"].dropna(), first["train_seconds"].dropna())
    assert len(list(saved.glob("*.npz"))) == len(list(saved.glob("*.json"))) == 2 * 4  # (start, trained) x conditions
    for _, r in first.iterrows():
        pred = Predictions.load(saved / f"bert-chitchat-0-segments-seed3-{r['stage']}-{r['corpus']}-{r['sampler']}.npz")
        assert abs(float(np.nanmean(recall_at_k(pred.probs, pred.labels, 1))) - r["R@1"]) < 1e-3


def test_probe_trains_another_ranker_with_its_profile_section(tmp_root, capsys):
    """``--ranker sngp``: the GP ranker trained and scored as the study builds it, with no start stage; a head its
    profile section cannot have gets a row saying so; a ranker without one model of its own is refused before any
    work."""
    import pandas as pd

    from benchmarks.probe_joint import main

    (tmp_root / "params" / "probe.yaml").write_text(
        "extends: smoke\nprofile: probe\ndata: {max_examples: {train: 16, valid: 8, test: 8}}\n"
        "negatives: {eval: [mixed]}\ntraining: {pooling: pooler}\nrankers: {sngp: {spectral_norm: pooler}}\n"
    )
    out, saved = tmp_root / "probe-out", tmp_root / "probe-predictions"
    assert (
        main(
            [
                "probe",
                "--ranker",
                "sngp",
                "--joint-layers",
                "null",
                "--heads",
                "segments",
                "pooler",
                "--seeds",
                "3",
                "--resamples",
                "50",
                "--out",
                str(out),
                "--predictions",
                str(saved),
            ]
        )
        == 0
    )
    table = pd.read_csv(out / "joint_layers.csv", keep_default_na=False, na_values=[""])
    assert set(table["ranker"]) == {"sngp"}
    refused = table[table["stage"].isna()]
    assert refused["head"].tolist() == ["segments"] and "'pooler' normalises BERT's pooler" in refused["note"].iloc[0]
    ran = table[table["stage"].notna()]
    assert set(ran["stage"]) == {"trained"} and set(ran["head"]) == {"pooler"} and len(ran) == 2
    pred = Predictions.load(saved / "sngp-chitchat-null-pooler-seed3-trained-chitchat-mixed.npz")
    assert pred.meta["ranker"] == "sngp" and pred.n_samples > 1  # posterior draws, as the study's sngp gives
    capsys.readouterr()
    for ranker, why in [
        ("mc_dropout", "trains no single model of its own"),
        ("ensemble", "trains no single model"),
        ("nosuch", "unknown ranker 'nosuch'"),
    ]:
        assert (
            main(
                [
                    "probe",
                    "--ranker",
                    ranker,
                    "--joint-layers",
                    "null",
                    "--heads",
                    "pooler",
                    "--out",
                    str(tmp_root / "x"),
                ]
            )
            == 1
        )
        captured = capsys.readouterr()
        assert "--ranker: " in captured.err and why in captured.err
        assert "query sets" not in captured.out  # refused before the query sets are read


def test_probe_refuses_settings_the_backbone_cannot_have(tmp_root, capsys):
    from benchmarks.probe_joint import main

    assert main(["smoke", "--joint-layers", "3", "--heads", "segments", "--out", str(tmp_root / "x")]) == 1
    err = capsys.readouterr().err
    assert "--joint-layers: joint_layers: expected null or 0..2 (tiny-random has 2 encoder layers), got 3" in err
    assert not (tmp_root / "x").exists()
