"""Graph -> Graph passes: implicit_cast, constant folding, CSE, DCE, lossy-cast lint,
transpose sinking."""

from __future__ import annotations

from graphdsl.passes.cse import cse
from graphdsl.passes.dce import dce
from graphdsl.passes.fold import fold_constants
from graphdsl.passes.implicit_cast import explain, implicit_cast
from graphdsl.passes.layout import sink_transposes
from graphdsl.passes.lint import LossyCast, LossyCastWarning, lint_lossy
from graphdsl.passes.pipeline import DEFAULT_PASSES, canonicalize, run_passes

__all__ = [
    "DEFAULT_PASSES",
    "LossyCast",
    "LossyCastWarning",
    "canonicalize",
    "cse",
    "dce",
    "explain",
    "fold_constants",
    "implicit_cast",
    "lint_lossy",
    "run_passes",
    "sink_transposes",
]
