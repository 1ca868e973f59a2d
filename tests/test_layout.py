"""The layout the README and the package docstrings describe is the tree that exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "lib" / "calibrank"
#: Subpackages whose docstring lists its modules one by one as ":mod:`.name`".
LISTED = (
    "study",
    "study.settings",
    "study.data",
    "study.model",
    "study.model.gp",
    "study.analysis",
    "study.analysis.practice",
    "study.pipeline",
    "metrics",
    "methods",
    "assess",
)


def _modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


def _subpackages(folder: Path) -> set[str]:
    return {p.parent.name for p in folder.glob("*/__init__.py")}


@pytest.mark.parametrize("package", LISTED)
def test_each_subpackage_docstring_lists_exactly_its_modules(package):
    doc = importlib.import_module(f"calibrank.{package}").__doc__ or ""
    listed = set(re.findall(r":mod:`\.(\w+)`", doc))
    folder = LIB / package.replace(".", "/")
    assert _modules(folder) <= listed <= _modules(folder) | _subpackages(folder), (
        f"calibrank.{package}: docstring lists {sorted(listed)}"
    )


def test_the_benchmarks_docstring_lists_exactly_its_modules():
    doc = importlib.import_module("benchmarks").__doc__ or ""
    assert set(re.findall(r":mod:`\.(\w+)`", doc)) == _modules(ROOT / "benchmarks")


def test_the_architecture_page_names_every_module_and_subpackage():
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = page.split("## The layers", 1)[1].split("```")[1]
    lib = block.split("lib/calibrank/", 1)[1]
    words = set(re.findall(r"[a-z_]+/?", lib))
    tree = {p.stem for p in LIB.glob("*.py") if p.stem != "__init__"}
    tree |= {p.parent.name + "/" for p in LIB.rglob("__init__.py") if p.parent != LIB}
    assert tree - words == set(), "ARCHITECTURE.md misses these parts of lib/calibrank"


def test_the_readme_names_every_profile():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w-]+)`", readme))
    assert {p.stem for p in (ROOT / "params").glob("*.yaml")} <= named
