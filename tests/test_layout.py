"""The layout the README and the package docstrings describe is the tree that exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "lib" / "calibrank"
#: Subpackages whose docstring lists its modules one by one as ":mod:`.name`".
LISTED = ("study", "study.settings", "study.data", "study.model", "study.model.gp", "study.analysis", "study.analysis.practice", "study.pipeline", "metrics", "methods", "assess")


def _modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


def _subpackages(folder: Path) -> set[str]:
    return {p.parent.name for p in folder.glob("*/__init__.py")}


@pytest.mark.parametrize("package", LISTED)
def test_each_subpackage_docstring_lists_exactly_its_modules(package):
    doc = importlib.import_module(f"calibrank.{package}").__doc__ or ""
    listed = set(re.findall(r":mod:`\.(\w+)`", doc))
    folder = LIB / package.replace(".", "/")
    assert _modules(folder) <= listed <= _modules(folder) | _subpackages(folder), \
        f"calibrank.{package}: docstring lists {sorted(listed)}"


def test_the_benchmarks_docstring_lists_exactly_its_modules():
    doc = importlib.import_module("benchmarks").__doc__ or ""
    assert set(re.findall(r":mod:`\.(\w+)`", doc)) == _modules(ROOT / "benchmarks")


def test_the_readme_layout_names_every_module_and_subpackage():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Layout", 1)[1].split("```")[1]
    lib = block.split("workflow/", 1)[0].split("lib/calibrank/", 1)[1]
    words = set(re.findall(r"[a-z_]+/?", lib))
    tree = {p.stem for p in LIB.glob("*.py") if p.stem != "__init__"}
    tree |= {p.parent.name + "/" for p in LIB.rglob("__init__.py") if p.parent != LIB}
    assert tree - words == set(), "README layout misses these parts of lib/calibrank"
    stale = {w for w in words if (w.endswith("/") or w in tree) and w not in tree}
    assert not stale
    profiles = set(re.findall(r"([\w-]+)\.yaml", block))
    assert profiles == {p.stem for p in (ROOT / "params").glob("*.yaml")}
