"""Reading a run needs neither torch nor transformers: the checkpoint scorer is imported only for a checkpoint."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, REPO

HERE = FIXTURES / "assess"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_reading_a_run_imports_no_torch():
    done = _python(
        "import sys\n"
        "from calibrank.assess.read.load import load\n"
        f"inputs = load(run={str(HERE / 'run.txt')!r}, qrels={str(HERE / 'qrels.txt')!r})\n"
        f"load(table={str(HERE / 'scores.csv')!r}, score='probability')\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'ranx', 'numba') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "print(len(inputs.test.qids) + len(inputs.valid.qids))\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3"


def test_a_checkpoint_without_torch_is_one_clear_line(tmp_path):
    """torch and transformers made unimportable: runs still read; a checkpoint names the extra to install."""
    done = _python(
        "import sys\n"
        "sys.modules['torch'] = None\n"  # 'import torch' now fails as if it were not installed
        "sys.modules['transformers'] = None\n"
        "from calibrank.assess.read.load import load\n"
        "from calibrank.assess.read.scored import AssessError\n"
        f"load(run={str(HERE / 'run.txt')!r}, qrels={str(HERE / 'qrels.txt')!r})\n"
        "try:\n"
        f"    load(checkpoint={str(tmp_path)!r}, queries={str(tmp_path / 'q.jsonl')!r})\n"
        "except AssessError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "--checkpoint needs the optional dependencies: pip install 'calibrank[checkpoint]'\n"
