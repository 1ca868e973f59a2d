"""Shared test setup: offline, quiet, and every test that writes files gets its own project root."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
if str(REPO) not in sys.path:  # the benchmarks package lives at the repository root, beside lib/
    sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@contextlib.contextmanager
def project_root(path: Path) -> Iterator[Path]:
    """``path`` as a throw-away project root (with the repo's params/) while the block runs: for
    module-scoped fixtures, which cannot use :func:`tmp_root`."""
    shutil.copytree(REPO / "params", path / "params")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALIBRANK_ROOT", str(path))
        yield path


@pytest.fixture
def tmp_root(tmp_path) -> Iterator[Path]:
    """A throw-away project root (with the repo's params/) so runs/ and data/cache/ never touch the checkout."""
    with project_root(tmp_path) as root:
        yield root


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The tests train tiny models: one intra-op thread is several times faster than two on a shared 2-core machine.
    (The core's tests also run where torch is not installed: then there is nothing to set.)"""
    try:
        import torch
    except ModuleNotFoundError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


#: The core's tests: they need nothing of the study (a test of the study inside them skips where the study is not
#: installed), so they also run in the venvs of tests/ranges.py that hold the core alone at its lowest versions.
CORE_TESTS = {
    "test_assess_certify.py",
    "test_assess_cli.py",
    "test_assess_engine.py",
    "test_assess_frames.py",
    "test_assess_imports.py",
    "test_assess_inputs.py",
    "test_assess_trec_eval.py",
    "test_calibrator.py",
    "test_layers.py",
    "test_metrics.py",
    "test_options.py",
    "test_resample.py",
    "test_risk.py",
    "test_table_checks.py",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in CORE_TESTS:
            item.add_marker(pytest.mark.core)
