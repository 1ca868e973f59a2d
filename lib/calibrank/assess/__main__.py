"""``python -m calibrank.assess ...``: the same as ``calibrank assess ...``."""

from __future__ import annotations

import sys

from calibrank.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["assess", *sys.argv[1:]]))
