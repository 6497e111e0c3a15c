"""``Parameter``: what a module declares of a weight (no data), below the modules that hold,
trace and load them."""

from __future__ import annotations

from typing import NamedTuple

from graphdsl.dtypes import DType

__all__ = ["Parameter"]


class Parameter(NamedTuple):
    """A parameter's declaration: its static shape and dtype. A module holds these; in a
    graph each becomes a weight (``g.weight``) named by its place in the module tree.
    ``in_graph=False`` marks one that ``load_state_dict`` checks but no graph reads (batch
    norm's ``num_batches_tracked``).

    >>> import graphdsl as gd
    >>> from graphdsl import nn
    >>> nn.Parameter((2, 3))
    Parameter(shape=(2, 3), dtype=DType.float32, in_graph=True)
    >>> dict(nn.BatchNorm2d(2).named_parameters())["num_batches_tracked"]
    Parameter(shape=(), dtype=DType.int64, in_graph=False)
    """

    shape: tuple[int, ...]
    dtype: DType = DType.float32
    in_graph: bool = True
