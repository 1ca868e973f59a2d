"""Shared test setup: offline, quiet, and every test that writes files gets its own project root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def tmp_root(tmp_path, monkeypatch) -> Path:
    """A throw-away project root (with the repo's params/) so runs/ and data/cache/ never touch the checkout."""
    shutil.copytree(REPO / "params", tmp_path / "params")
    monkeypatch.setenv("CALIBRANK_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The tests train tiny models: one intra-op thread is several times faster than two on a shared 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
