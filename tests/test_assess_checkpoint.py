"""A local cross-encoder checkpoint scored on a JSONL of queries: the model's own logits, ragged lists, MC Dropout, bad input."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    BertModel,
)

from calibrank.assess.read.checkpoint import Candidate, TextQuery, load_checkpoint, read_queries, score_checkpoint
from calibrank.assess.read.scored import AssessError, ScoreKind
from calibrank.study.model.backbone import resolve_checkpoint

QUERIES = [
    {
        "qid": "q1",
        "query": "how do I reset my router",
        "candidates": [
            {"docid": "a", "text": "unplug it for thirty seconds", "label": 2},
            {"docid": "b", "text": "the weather is nice today", "label": 0},
            {"docid": "c", "text": "hold the reset button", "label": 1},
        ],
    },
    {
        "qid": "q2",
        "context": ["hi there", "hello, how can I help?", "my order never arrived"],
        "candidates": [
            {"docid": "x", "text": "sorry to hear that, what is the order number?", "label": 1},
        ],
    },
    {
        "qid": "q3",
        "query": "best pizza in town",
        "candidates": [
            {"docid": "p1", "text": "luigi's on main street", "label": 1},
            {"docid": "p2", "text": "I like trains", "label": 0},
            {"docid": "p3", "text": "pizza is round", "label": 0},
            {"docid": "p4", "text": "try the one by the station"},
        ],
    },
]


def _config(tokenizer, num_labels, dropout=0.1):
    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=num_labels,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        initializer_range=0.5,
    )  # BERT's 0.02 gives every pair almost the same logit


def _classifier(config, seed):
    torch.manual_seed(seed)
    return BertForSequenceClassification(config).eval()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from sentence_transformers import CrossEncoder

    root = tmp_path_factory.mktemp("checkpoints")
    tokenizer = AutoTokenizer.from_pretrained(resolve_checkpoint("tiny-random"), local_files_only=True)
    raw = root / "raw"
    _classifier(_config(tokenizer, 1), seed=0).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    cross_encoder = CrossEncoder(str(raw), local_files_only=True)
    cross_encoder.save(str(root / "cross-encoder"))
    two = root / "two-labels"
    torch.manual_seed(1)
    AutoModelForSequenceClassification.from_config(_config(tokenizer, 2)).save_pretrained(two)
    tokenizer.save_pretrained(two)
    queries = root / "queries.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
    return {
        "root": root,
        "ce": root / "cross-encoder",
        "two": two,
        "queries": queries,
        "cross_encoder": cross_encoder,
        "tokenizer": tokenizer,
    }


def _texts(q):
    return q["query"] if "query" in q else " ".join(q["context"])


def _pairs():
    return [(_texts(q), c["text"]) for q in QUERIES for c in q["candidates"]]


def _flat(run):
    return run.scores[:, run.mask]  # [S, N] in query order, candidates in list order


# ----------------------------------------------------------------------------- the model's own numbers


def test_a_cross_encoder_folder_scores_its_raw_logits(folders):
    run = score_checkpoint(folders["ce"], folders["queries"], precision="fp32")
    expected = folders["cross_encoder"].predict(_pairs(), activation_fn=torch.nn.Identity(), batch_size=2)
    assert run.kind is ScoreKind.logit and run.n_samples == 1
    assert np.ptp(expected) > 0.1  # the candidates' logits differ: the comparison can fail
    np.testing.assert_allclose(_flat(run)[0], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(run.probabilities()[0][run.mask], 1 / (1 + np.exp(-expected)), atol=1e-5)
    assert run.meta["n_labels"] == 1 and run.meta["ranker"] == "cross-encoder" and not run.meta["bf16"]


def test_two_labels_score_the_log_odds_of_the_relevant_class(folders):
    run = score_checkpoint(folders["two"], folders["queries"], precision="fp32", batch_size=3)
    model, tokenizer, n_labels = load_checkpoint(folders["two"])
    assert n_labels == 2
    with torch.no_grad():  # one pair at a time, no padding: an oracle independent of the batching
        logp = torch.cat(
            [torch.log_softmax(model(**tokenizer(a, b, return_tensors="pt")).logits, dim=-1) for a, b in _pairs()]
        ).numpy()
    assert np.ptp(logp[:, 1] - logp[:, 0]) > 0.1
    np.testing.assert_allclose(_flat(run)[0], logp[:, 1] - logp[:, 0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(run.probabilities()[0][run.mask], np.exp(logp[:, 1]), atol=1e-6)


def test_ragged_lists_keep_their_docids_mask_and_labels(folders):
    run = score_checkpoint(folders["ce"], folders["queries"], precision="fp32", relevant_at=2)
    assert run.qids.tolist() == ["q1", "q2", "q3"]
    assert run.mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]]
    assert run.docids.tolist() == [["a", "b", "c", ""], ["x", "", "", ""], ["p1", "p2", "p3", "p4"]]
    assert (run.scores[:, ~run.mask] == 0).all()
    assert run.relevance.tolist() == [[2, 0, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0]]
    assert run.judged.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 0]]  # p4 has no label: unjudged
    assert run.labels.tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]  # grade >= relevant_at=2
    assert run.n_relevant.tolist() == [1, 0, 0]
    pred = run.to_predictions()
    assert pred.ragged and pred.lengths.tolist() == [3, 1, 4]


def test_qrels_give_grades_judged_and_the_relevant_count_beyond_the_list(folders):
    unlabelled = [
        TextQuery(
            q["qid"],
            tuple(Candidate(c["docid"], c["text"]) for c in q["candidates"]),
            q.get("query"),
            tuple(q.get("context", ())),
        )
        for q in QUERIES
    ]
    qrels = {"q1": {"a": 1, "zz": 2, "b": 0}, "q3": {"p4": 3}, "other": {"k": 1}}
    run = score_checkpoint(folders["ce"], unlabelled, qrels=qrels, precision="fp32")
    assert run.relevance.tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 3]]
    assert run.judged.tolist() == [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    assert run.n_relevant.tolist() == [2, 0, 1]  # q1's zz is relevant but not retrieved
    np.testing.assert_array_equal(
        run.scores, score_checkpoint(folders["ce"], folders["queries"], precision="fp32").scores
    )


# ----------------------------------------------------------------------------- MC Dropout


def test_mc_dropout_passes_are_seeded_samples(folders):
    det = score_checkpoint(folders["ce"], folders["queries"], precision="fp32")
    mc = score_checkpoint(folders["ce"], folders["queries"], passes=5, seed=3, precision="fp32")
    again = score_checkpoint(folders["ce"], folders["queries"], passes=5, seed=3, precision="fp32")
    other = score_checkpoint(folders["ce"], folders["queries"], passes=5, seed=4, precision="fp32")
    assert mc.n_samples == 5 and mc.meta["passes"] == 5
    flat = _flat(mc)
    assert len({tuple(np.round(s, 12)) for s in flat}) == 5  # five different dropout masks
    assert not np.allclose(flat, _flat(det)[0])  # dropout is on
    np.testing.assert_array_equal(mc.scores, again.scores)
    assert not np.array_equal(mc.scores, other.scores)
    np.testing.assert_array_equal(
        det.scores, score_checkpoint(folders["ce"], folders["queries"], precision="fp32").scores
    )
    assert (mc.scores[:, ~mc.mask] == 0).all()


def test_mc_dropout_without_dropout_is_refused(folders):
    folder = folders["root"] / "no-dropout"
    _classifier(_config(folders["tokenizer"], 1, dropout=0.0), seed=0).save_pretrained(folder)
    folders["tokenizer"].save_pretrained(folder)
    with pytest.raises(AssessError, match="no-dropout.*identical passes"):
        score_checkpoint(folder, folders["queries"], passes=3, precision="fp32")


# ----------------------------------------------------------------------------- truncation


def test_a_long_context_loses_its_oldest_turns_and_a_long_candidate_is_cut(folders):
    tokenizer = folders["tokenizer"]
    old = " ".join(f"word{i}" for i in range(40))
    queries = [
        TextQuery("c", (Candidate("d", "thanks a lot"),), context=(old, "where is my parcel")),
        TextQuery("s", (Candidate("d", "a b c d e f g h i j k l m n o p q r s t"),), query="short query"),
    ]
    run = score_checkpoint(folders["ce"], queries, qrels={"c": {"d": 1}}, max_length=16, precision="fp32")
    model, _, _ = load_checkpoint(folders["ce"])
    recent = tokenizer(" ".join([old, "where is my parcel"]), add_special_tokens=False)["input_ids"]
    cand = tokenizer("thanks a lot", add_special_tokens=False)["input_ids"]
    keep = 16 - 3 - len(cand)
    ids = [tokenizer.cls_token_id, *recent[-keep:], tokenizer.sep_token_id, *cand, tokenizer.sep_token_id]
    types = [0] * (keep + 2) + [1] * (len(cand) + 1)
    with torch.no_grad():
        expected = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types])).logits[0, 0].item()
    assert tokenizer.convert_ids_to_tokens(recent[-keep:])[-4:] == ["where", "is", "my", "parcel"]
    assert run.scores[0, 0, 0] == pytest.approx(expected, abs=1e-5)
    assert run.meta["truncated_pairs"] == 2 and run.meta["truncated_candidates"] == 1 and run.meta["max_length"] == 16


# ----------------------------------------------------------------------------- bad input


BAD_LINES = [
    ('{"qid": "q9", "query": "x", "candidates": [', "not valid JSON"),
    ('{"query": "x", "candidates": [{"docid": "a", "text": "t"}]}', "missing 'qid'"),
    ('{"qid": "q9", "candidates": [{"docid": "a", "text": "t"}]}', "missing 'query'"),
    ('{"qid": "q9", "query": "x", "candidate": [{"docid": "a", "text": "t"}]}', r"unknown key\(s\) \['candidate'\]"),
    (
        '{"qid": "q9", "query": "x", "candidates": [{"docid": "a", "txt": "t"}]}',
        r"candidate 0: unknown key\(s\) \['txt'\]",
    ),
    ('{"qid": "q9", "query": "x", "candidates": [{"docid": "a"}]}', "candidate 0: missing 'text'"),
    ('{"qid": "q9", "query": "x", "candidates": []}', "expected a non-empty list"),
    ('{"qid": "q1", "query": "x", "candidates": [{"docid": "a", "text": "t"}]}', "qid 'q1' already given on line 1"),
    (
        '{"qid": "q9", "query": "x", "candidates": [{"docid": "a", "text": "t"}, {"docid": "a", "text": "u"}]}',
        "docid 'a' appears twice",
    ),
    (
        '{"qid": "q9", "query": "x", "candidates": [{"docid": "a", "text": 3}]}',
        "query 'q9': candidate 0: candidate 'a': text: expected a string, got int",
    ),
    (
        '{"qid": "q9", "query": ["x"], "candidates": [{"docid": "a", "text": "t"}]}',
        "query: expected a string, got list",
    ),
    (
        '{"qid": "q9", "query": "x", "context": ["y"], "candidates": [{"docid": "a", "text": "t"}]}',
        "both 'query' and 'context'",
    ),
    ('{"qid": "q9", "qid": "q8", "query": "x", "candidates": [{"docid": "a", "text": "t"}]}', "key 'qid' given twice"),
    (
        '{"qid": "q9", "query": "x", "candidates": [{"docid": "a", "text": "t", "label": "1"}]}',
        "expected an integer relevance grade",
    ),
    ('["q9", "x"]', "expected a JSON object"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_a_bad_line_names_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps(QUERIES[0]) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(AssessError, match=message) as err:
        read_queries(path)
    assert f"{path}, line 3: " in str(err.value)


def test_the_reader_keeps_the_file_as_written(folders):
    queries = read_queries(folders["queries"])
    assert [q.qid for q in queries] == ["q1", "q2", "q3"]
    assert queries[1].context == tuple(QUERIES[1]["context"]) and queries[1].query is None
    assert queries[1].text == "hi there hello, how can I help? my order never arrived"
    assert [c.label for c in queries[2].candidates] == [1, 0, 0, None]


def test_a_line_separator_inside_a_text_is_text(tmp_path):
    path = tmp_path / "queries.jsonl"
    record = {"qid": 7, "query": "first\u2028second", "candidates": [{"docid": 1, "text": "x\u0085y", "label": 1}]}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\r\n", encoding="utf-8")
    (query,) = read_queries(path)
    assert (query.qid, query.query, query.candidates[0].docid, query.candidates[0].text) == (
        "7",
        "first\u2028second",
        "1",
        "x\u0085y",
    )


def test_a_file_without_queries_or_not_utf8_is_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(AssessError, match=f"{empty}: no queries"):
        read_queries(empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"qid": "q", "query": "caf\xe9", "candidates": []}\n')
    with pytest.raises(AssessError, match=f"{latin}: not UTF-8 text at line 1"):
        read_queries(latin)


def _copy_without(src: Path, dst: Path, drop: tuple[str, ...]) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file() and f.name not in drop:
            (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_a_folder_that_is_not_a_one_or_two_label_classifier_is_refused(folders, tmp_path):
    tokenizer = folders["tokenizer"]
    with pytest.raises(AssessError, match="no config.json"):
        load_checkpoint(_copy_without(folders["ce"], tmp_path / "noconfig", ("config.json",)))
    with pytest.raises(AssessError, match="no tokenizer"):
        load_checkpoint(_copy_without(folders["ce"], tmp_path / "notokenizer", ("tokenizer.json", "vocab.txt")))
    with pytest.raises(AssessError, match="no weights"):
        load_checkpoint(_copy_without(folders["ce"], tmp_path / "noweights", ("model.safetensors",)))
    encoder = tmp_path / "encoder"
    torch.manual_seed(0)
    BertModel(_config(tokenizer, 1)).save_pretrained(encoder)
    with pytest.raises(
        AssessError, match=f"{encoder}/config.json: architecture BertModel is not a sequence classifier"
    ):
        load_checkpoint(encoder)
    # the encoder's weights under a classifier's config: the head would be random
    config = json.loads((encoder / "config.json").read_text())
    (encoder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(AssessError, match=f"{encoder}: the weights lack .*classifier"):
        load_checkpoint(encoder)
    nli = tmp_path / "nli"
    _classifier(_config(tokenizer, 3), seed=0).save_pretrained(nli)
    with pytest.raises(AssessError, match=f"{nli}/config.json: 3 labels"):
        load_checkpoint(nli)
    with pytest.raises(AssessError, match="not a folder"):
        load_checkpoint(tmp_path / "missing")


def test_labels_and_parameters_are_checked_before_scoring(folders):
    bare = [TextQuery("q", (Candidate("d", "text"),), query="query")]
    with pytest.raises(AssessError, match="no labels"):
        score_checkpoint(folders["ce"], bare)
    with pytest.raises(AssessError, match="qrels: given, but .* also labels"):
        score_checkpoint(folders["ce"], folders["queries"], qrels={"q1": {"a": 1}})
    with pytest.raises(AssessError, match=r"qrels\['q'\]\['d'\]: expected an integer"):
        score_checkpoint(folders["ce"], bare, qrels={"q": {"d": "yes"}})
    with pytest.raises(AssessError, match="qrels: judge none of the 1 queries"):
        score_checkpoint(folders["ce"], bare, qrels={"Q": {"d": 1}})
    with pytest.raises(AssessError, match="passes: expected a whole number >= 0"):
        score_checkpoint(folders["ce"], folders["queries"], passes=-1)
    with pytest.raises(AssessError, match="precision: expected one of"):
        score_checkpoint(folders["ce"], folders["queries"], precision="fp16")
    with pytest.raises(AssessError, match="qid 'q' given twice"):
        score_checkpoint(folders["ce"], bare * 2, qrels={"q": {}})
