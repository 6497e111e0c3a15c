"""What run() says when onnxruntime refuses a model or its inputs: :class:`RunError`, with
the graphdsl op and source line of the node that failed (the exporter names each node after
them), what went wrong in the reference's words where the message is one run() knows, and
the providers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import onnxruntime as ort
from onnx import ModelProto

from exporters.onnx._lower.checks import INDEX_CHECK
from exporters.onnx._run_options import Options
from graphdsl.graph import Graph

__all__ = ["RunError"]


class RunError(ValueError):
    """Inputs that do not fit the model, or a model that onnxruntime cannot load or run (its
    message, with the graphdsl op and source line of the node that failed).

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import run
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> g.output(g.inputs[0] + 1)
    >>> run(g, {"x": np.zeros(3, np.int8)})
    Traceback (most recent call last):
        ...
    exporters.onnx._run_errors.RunError: input 'x': expected shape (4,), got (3,)
    """


# every exception onnxruntime's binding raises (Fail, InvalidGraph, NotImplemented,
# RuntimeException, InvalidArgument, ...): each becomes a RunError
_ORT_ERRORS: tuple[type[BaseException], ...] = tuple(
    v for v in vars(ort.capi.onnxruntime_pybind11_state).values()
    if isinstance(v, type) and issubclass(v, Exception)
)  # fmt: skip
_NODE_NAME = re.compile(r"(?:Name:|node with name )'([^']*)'")


def _explain(what: str, e: BaseException, proto: ModelProto | None, opts: Options) -> str:
    """``what`` failed with onnxruntime's error ``e``: the failing node's graphdsl op and
    source line (the exporter names each node after them), what went wrong where it is
    known (an index out of range, shapes that do not broadcast), and onnxruntime's own
    message with the providers."""
    msg = str(e).strip()
    first = msg.splitlines()[0] if msg else type(e).__name__
    found = _NODE_NAME.search(msg)
    name = found.group(1) if found else ""
    if name and " at " not in name and proto is not None:
        # a node an optimizer made, named after the output of the one it replaced (the NCHWc
        # layout's "<output>_nchwc"): that node's name (its op and line)
        made_from = name.removesuffix("_nchwc")
        name = next((n.name for n in proto.graph.node if made_from in n.output), name)
    where = name.split("/", 1)[0] if "/" in name else name
    reason = _reason(msg, name)
    detail = f"onnxruntime on {', '.join(opts.names)}: {first}"
    if where and reason:
        return f"{where}: {reason} ({what}; {detail})"
    if where:
        return f"{what} at node {where!r} ({detail})"
    return f"{what} ({detail})"


_GATHER_RANGE = re.compile(r"idx=(-?\d+) must be within the inclusive range \[(-?\d+),(-?\d+)\]")
# GatherND's and ScatterND's kernels: "invalid index found, index = 5", "invalid indice
# found, indice = 5" (the value, not its position)
_ND_RANGE = re.compile(r"invalid ind(?:ice|ex) found, ind(?:ice|ex) = (-?\d+)")
_BROADCAST = re.compile(r"broadcast an axis by a dimension other than 1\. (\d+) by (\d+)")
# the CPU Conv and pools refuse an empty spatial axis ("Invalid input shape: {0,5}")
_EMPTY_WINDOWS = re.compile(r"Invalid input shape: \{([0-9,]*\b0\b[0-9,]*)\}")


def _reason(msg: str, node: str) -> str:
    """What onnxruntime's message ``msg`` about node ``node`` means, in the reference's words
    where it is one of the errors run() knows; "" otherwise."""
    m = _GATHER_RANGE.search(msg)
    if m:
        size = int(m.group(3)) + 1
        return f"index {m.group(1)} is out of range for an axis of size {size}"
    m = _ND_RANGE.search(msg)
    if m:
        return f"index {m.group(1)} is out of range for its axis"
    if INDEX_CHECK in node:
        return "an index is out of range for its axis"
    m = _BROADCAST.search(msg)
    if m:
        return f"sizes {m.group(1)} and {m.group(2)} do not broadcast"
    m = _EMPTY_WINDOWS.search(msg)
    if m:
        return (
            f"onnxruntime's kernel refuses the empty spatial size ({m.group(1)}) that the "
            "reference gives an empty result for; give the window op non-empty sizes"
        )
    return ""


def _reference_says(graph: Graph, inputs: Mapping[str, Any] | Sequence[Any]) -> str | None:
    """The reference's own error for ``inputs`` (the op, its source line and what is wrong,
    as gd.evaluate says it), where onnxruntime failed; None where the reference runs them
    (or needs weights run() does not have)."""
    from graphdsl.evaluate import evaluate
    from graphdsl.types import IndexRangeError
    from graphdsl.weights import declared_weights

    if declared_weights(graph):
        return None
    try:
        evaluate(graph, inputs)
    except (IndexRangeError, ValueError, TypeError) as e:
        return f"{e} (onnxruntime refused the inputs too)"
    except Exception:  # the reference failing otherwise says nothing about the inputs
        return None
    return None


def _describe(model: object) -> str:
    if isinstance(model, ModelProto):
        return f"model {model.graph.name!r}"
    if isinstance(model, Graph):
        return f"graph {model.name!r}"
    if isinstance(model, str):
        return f"model {model!r}"
    return f"model {getattr(getattr(model, 'graph', None), 'name', '?')!r}"
