"""The scoring batch follows the device where the profile leaves it open, and Predictions state how they were scored."""

import pytest
import torch

from calibrank.hardware import SCORING_BATCH, precision_name, scoring_batch_size
from calibrank.study.model.rankers import RankerRun, make_ranker
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.schema import TrainingConfig
from rankfix import learnable_queries, tiny_training


def test_an_open_scoring_batch_follows_the_device_and_a_set_one_is_kept():
    assert TrainingConfig().eval_batch_size is None
    assert scoring_batch_size(None, torch.device("cpu")) == SCORING_BATCH["cpu"] == 64
    assert scoring_batch_size(None, torch.device("cuda")) == SCORING_BATCH["cuda"] == 1024
    assert scoring_batch_size(32, torch.device("cuda")) == 32
    assert precision_name("fp32", torch.device("cpu")) == "fp32"
    TrainingConfig(eval_batch_size=None).check()
    with pytest.raises(ConfigError, match="eval_batch_size"):
        TrainingConfig(eval_batch_size=0).check()


def test_predictions_state_device_precision_batch_and_encode_once(tmp_path):
    run = RankerRun(
        tiny_training(
            epochs=1, eval_batch_size=None, joint_layers=0, pooling="segments", max_length=20, max_response_length=10
        ),
        tmp_path,
        device="cpu",
    )
    ranker = make_ranker("bert", run)
    assert ranker.training.eval_batch_size == 64
    ranker.fit(learnable_queries(16, 1, seed=0), learnable_queries(4, 3, seed=1))
    meta = ranker.predict(learnable_queries(4, 3, seed=2)).meta["scoring"]
    assert meta == {"device": "cpu", "precision": "fp32", "batch_size": 64, "encode_once": True}
    mc = make_ranker("mc_dropout", run, masks="per_pair")
    assert not mc.scores_sides()
