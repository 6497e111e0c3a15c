"""The lowering table: one function per graphdsl op, producing ONNX nodes, by family
(mirroring ``graphdsl/ops/``); legalizations live beside the lowering they change.

Each function gets the builder, the graphdsl node, and its operands as :class:`V` values
already of the node's operand dtypes (the ``implicit_cast`` pass guarantees that; the
caller asserts it). Results equal ``graphdsl.evaluate``: see each rewrite's comment.
"""

from __future__ import annotations

from exporters.onnx._lower import activation as activation
from exporters.onnx._lower import cast as cast
from exporters.onnx._lower import control as control
from exporters.onnx._lower import elementwise as elementwise
from exporters.onnx._lower import indexing as indexing
from exporters.onnx._lower import layers as layers
from exporters.onnx._lower import logic as logic
from exporters.onnx._lower import nn as nn
from exporters.onnx._lower import norm as norm
from exporters.onnx._lower import quant as quant
from exporters.onnx._lower import reduction as reduction
from exporters.onnx._lower import scatter as scatter
from exporters.onnx._lower import selection as selection
from exporters.onnx._lower import shape as shape
from exporters.onnx._lower import unary as unary
from exporters.onnx._lower import vision as vision
from exporters.onnx._lower._common import LOWER, SymbolicDims

__all__ = ["LOWER", "SymbolicDims"]

# MAX's ops added for graphdsl.max (issue 25)
from exporters.onnx._lower import debug as debug
from exporters.onnx._lower import dynamic as dynamic
from exporters.onnx._lower import gqa as gqa  # onnxruntime's KV-cache attention (issue 31)
from exporters.onnx._lower import image as image
from exporters.onnx._lower import ordering as ordering
from exporters.onnx._lower import random as random
from exporters.onnx._lower import scatter_reduce as scatter_reduce
