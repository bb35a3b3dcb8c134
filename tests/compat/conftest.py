"""The compatibility tests use the pipeline tests' ``source`` fixture (``dbo.orders`` /
``dbo.other``, tests/_pipeline.py) and import ``reference_script`` from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
