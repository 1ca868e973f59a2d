"""The core stands alone: the study sits on it, never the reverse, and the command loads nothing of the study.

Checked two ways: statically, every import statement of the core (at module level or inside a function) and
every module name handed to ``importlib``; and in a fresh interpreter, what ``import calibrank``, ``calibrank
--help`` and a whole ``calibrank.evaluate`` actually load.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"

#: What may import what, as (importer prefix, forbidden prefixes): each line is a rule of ARCHITECTURE.md.
RULES = [
    ("calibrank", ("calibrank.study",)),  # the core never imports the study (study modules are exempt below)
    ("calibrank.metrics", ("calibrank.assess", "calibrank.cli", "calibrank.methods", "calibrank.pairs")),
    ("calibrank.methods", ("calibrank.assess", "calibrank.cli", "calibrank.pairs")),
    ("calibrank.assess", ("calibrank.cli",)),
    (
        "calibrank.assess.read",
        (
            "calibrank.assess.deploy",
            "calibrank.assess.sections",
            "calibrank.assess.page",
            "calibrank.assess.engine",
            "calibrank.assess.api",
            "calibrank.assess.command",
        ),
    ),
    (
        "calibrank.assess.deploy",
        (
            "calibrank.assess.sections",
            "calibrank.assess.page",
            "calibrank.assess.engine",
            "calibrank.assess.api",
            "calibrank.assess.command",
        ),
    ),
    (
        "calibrank.assess.sections",
        ("calibrank.assess.page", "calibrank.assess.engine", "calibrank.assess.api", "calibrank.assess.command"),
    ),
]
#: Modules that import only the standard library and each other: the command's --help reads them alone.
STDLIB_ONLY = {"calibrank", "calibrank.assess", "calibrank.assess.errors", "calibrank.assess.options", "calibrank.cli"}
#: Loaded by none of `import calibrank`, `calibrank --help` or a whole assessment.
NEVER = (
    "calibrank.study",
    "yaml",
    "torch",
    "transformers",
    "papermill",
    "sklearn.ensemble",
    "jupyter_client",
    "snakemake",
    "seaborn",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, wherever the statement stands, with importlib's string arguments."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                target = arg.value
                if target.startswith("."):
                    target = package + target
                found.append((node.lineno, target))
    return found


def core_modules() -> list[Path]:
    return [p for p in sorted((LIB / "calibrank").rglob("*.py")) if not module_name(p).startswith("calibrank.study")]


def violations() -> list[str]:
    bad = []
    for path in core_modules():
        name = module_name(path)
        if path.stem == "__main__":  # an entry point (python -m) calls the command: it sits above everything
            continue
        for line, target in imports_of(path):
            for importer, forbidden in RULES:
                if name == importer or name.startswith(importer + "."):
                    hit = [f for f in forbidden if target == f or target.startswith(f + ".")]
                    if hit and not (name == target or name.startswith(hit[0] + ".")):
                        bad.append(f"{name}:{line} imports {target} ({importer} may not import {hit[0]})")
            if (
                name in STDLIB_ONLY
                and target.split(".")[0] not in sys.stdlib_module_names
                and target.split(".")[0] != "__future__"
                and not any(target == m or target.startswith(m + ".") for m in STDLIB_ONLY)
            ):
                if not (name == "calibrank.cli" and _deferred(path, line)):
                    bad.append(f"{name}:{line} imports {target} (it must load with the standard library alone)")
    return bad


def _deferred(path: Path, line: int) -> bool:
    """The command's imports inside its function: loaded only after the options hold (``--help`` stays light)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(f, ast.FunctionDef) and f.lineno < line <= (f.end_lineno or 0) for f in ast.walk(tree))


def test_the_core_imports_nothing_of_the_study_and_layers_point_down():
    assert len(core_modules()) > 40
    assert violations() == []


def test_the_direction_check_finds_an_upward_import(tmp_path, monkeypatch):
    """A core module importing the study, and a metric importing the assessment, are both caught."""
    fake = tmp_path / "calibrank"
    (fake / "metrics").mkdir(parents=True)
    (fake / "study").mkdir()
    for init in (fake / "__init__.py", fake / "metrics" / "__init__.py", fake / "study" / "__init__.py"):
        init.write_text("")
    (fake / "metrics" / "m.py").write_text(
        "import importlib\nfrom calibrank.assess.engine import assess\n"
        "x = importlib.import_module('calibrank.study.data')\n"
    )
    (fake / "study" / "s.py").write_text("from calibrank.metrics import m\n")  # downward: allowed
    monkeypatch.setattr(sys.modules[__name__], "LIB", tmp_path)
    found = violations()
    assert any("calibrank.metrics.m:2 imports calibrank.assess.engine" in v for v in found)
    assert any("calibrank.metrics.m:3 imports calibrank.study.data" in v for v in found)
    assert not any("calibrank.study.s" in v for v in found)


def _loaded(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def _forbidden(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER)]


def test_import_calibrank_and_the_commands_help_load_nothing_heavy():
    light = _loaded("import calibrank")
    assert not _forbidden(light)
    assert "numpy" not in light, "import calibrank must stay light: its names load on first use"
    helped = _loaded(
        "import calibrank, calibrank.cli\n"
        "for argv in (['--help'], ['assess', '--help']):\n"
        "    try:\n        calibrank.cli.main(argv)\n    except SystemExit:\n        pass"
    )
    assert not _forbidden(helped)
    assert "numpy" not in helped and "pandas" not in helped


def test_a_whole_assessment_loads_nothing_of_the_study():
    used = _loaded(
        "import numpy as np, tempfile, calibrank\n"
        "rng = np.random.default_rng(0)\n"
        "q = np.repeat(np.arange(120), 8); y = (rng.random(q.size) < 0.25).astype(int)\n"
        "s = 2 * y + rng.normal(size=q.size)\n"
        "r = calibrank.evaluate(s, y, q, n_resamples=20)\n"
        "r.save(tempfile.mkdtemp() + '/out')\n"
        "calibrank.fit(s, y, q).save(tempfile.mkdtemp() + '/c.json')"
    )
    assert "calibrank.assess.engine" in used
    assert not _forbidden(used), _forbidden(used)


@pytest.mark.parametrize("argv", [["--help"], ["assess", "--help"], ["--version"]])
def test_the_console_script_answers(argv):
    script = Path(sys.executable).with_name("calibrank")
    done = subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip()
