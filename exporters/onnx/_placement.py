"""Which nodes of a model a CUDA session runs on the CPU provider, and what that costs.

``target="cuda"`` means the CUDA provider with onnxruntime's CPU provider behind it, as users
list them: a node whose (op, element type) the CUDA provider registers no kernel for runs on
the CPU (the exporter chooses such a node only where no exact rewrite on the GPU is cheap:
bitwise ops, integer MatMul and ArgMax, 64-bit integer Pad, ...), and every tensor that
crosses between the devices is a copy. :func:`cpu_nodes` lists those nodes from the model
itself (its element types from onnx's shape inference, local functions inlined as
onnxruntime inlines them), each with the graphdsl op and source line its name carries and
the copies it adds; ``export(target="cuda")`` warns with :class:`CpuFallbackWarning` when
there are any.

>>> import graphdsl as gd
>>> from exporters.onnx import cpu_nodes, export
>>> g = gd.Graph("bits", input_types={"x": gd.TensorType(gd.int8, (4,))})
>>> g.output(g.inputs[0] & 3)
>>> [(n.key, n.types, n.copies) for n in cpu_nodes(export(g, target="cuda"))]
[('BitwiseAnd', ('INT8',), 0)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx
from onnx import TensorProto, helper, shape_inference

from exporters.onnx._targets import TARGETS, Target

__all__ = ["CpuFallbackWarning", "CpuNode", "cpu_nodes", "kernel_key", "typed_nodes"]

NAME = TensorProto.DataType.Name


class CpuFallbackWarning(UserWarning):
    """A model exported for CUDA has nodes that onnxruntime will run on the CPU provider.

    >>> import warnings, graphdsl as gd
    >>> from exporters.onnx import export, cpu_nodes
    >>> g = gd.Graph("mixed", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> x, = g.inputs
    >>> g.output((x & 3) + 1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = export(g, target="cuda")  # CUDA has no int8 BitwiseAnd
    >>> caught[0].category.__name__
    'CpuFallbackWarning'
    >>> print(caught[0].message)
    graph 'mixed' exported for 'cuda': 1 node(s) run on CPUExecutionProvider (no
    CUDAExecutionProvider kernel), 1 tensor copies between the devices per run:
    BitwiseAnd[INT8] (bitwise_and at ..., 1 copies) (exporters.onnx.cpu_nodes(model) lists
    them)
    """


@dataclass(frozen=True)
class CpuNode:
    """A node a CUDA session runs on the CPU: its ONNX op, the kernel table's key and the
    element types it is keyed by, its name (the graphdsl op and source line, with the ONNX
    value it makes), and the tensors copied between the devices for it (inputs made on the
    GPU, outputs read on the GPU).

    >>> import warnings, graphdsl as gd
    >>> from exporters.onnx import export, cpu_nodes
    >>> g = gd.Graph("mixed", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> x, = g.inputs
    >>> g.output((x & 3) + 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     (node,) = cpu_nodes(export(g, target="cuda"))
    >>> node.op, node.types, node.copies, node.name.split(" at ")[0]
    ('BitwiseAnd', ('INT8',), 1, 'bitwise_and')
    """

    op: str
    key: str
    types: tuple[str, ...]
    name: str
    copies: int

    def __str__(self) -> str:
        where = self.name.split("/", 1)[0] or self.op
        return f"{self.key}[{', '.join(self.types)}] ({where}, {self.copies} copies)"


def _attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def kernel_key(node: onnx.NodeProto, types: dict[str, int]) -> tuple[str, list[str]]:
    """The table key of ``node`` and the element types it must list, as the tables key them
    (exporters/onnx/kernels/cuda_documented.json's provenance notes)."""
    op = node.op_type

    def t(name: str) -> str:
        return str(NAME(types.get(name, 0)))

    if op == "Cast":
        return "Cast", [f"{t(node.input[0])}->{NAME(_attr(node, 'to'))}"]
    if op in ("If", "Loop", "Scan"):  # the values they carry out
        return op, [t(o) for o in node.output]
    # a node without inputs (RandomUniform, RandomNormal, Constant) is keyed by what it makes
    key, first = op, node.input[0] if node.input else node.output[0]
    if op == "Mod" and _attr(node, "fmod", 0) == 1:
        key = "Mod_fmod"
    elif op == "Where":
        first = node.input[1]
    elif op == "Pow" and types.get(node.input[1]) != types.get(node.input[0]):
        key = {"INT64": "Pow_exp_int64", "FLOAT": "Pow_exp_float"}.get(t(node.input[1]), "Pow?")
    elif op == "Gelu" and _attr(node, "approximate", b"none") == b"tanh":
        key = "Gelu_tanh"
    elif op == "Pad" and _attr(node, "mode", b"constant") != b"constant":
        key = "Pad_" + _attr(node, "mode").decode()
    elif op == "Resize":
        key = "Resize_" + _attr(node, "mode", b"nearest").decode()
    elif op in ("ScatterElements", "ScatterND") and _attr(node, "reduction", b"none") != b"none":
        key = f"{op}_{_attr(node, 'reduction').decode()}"
    elif op == "QuantizeLinear":
        key = {"INT8": "QuantizeLinear", "UINT8": "QuantizeLinear_uint8"}.get(
            t(node.output[0]), "QuantizeLinear?"
        )
    elif op == "DequantizeLinear":
        key = {"FLOAT": "DequantizeLinear", "FLOAT16": "DequantizeLinear_float16",
               "BFLOAT16": "DequantizeLinear_bfloat16"}.get(t(node.input[1]),
                                                             "DequantizeLinear?")  # fmt: skip
    return key, [t(first)]


def typed_nodes(model: onnx.ModelProto) -> tuple[list[onnx.NodeProto], dict[str, int]]:
    """Every node (local functions inlined, as onnxruntime does; If/Loop bodies too) and the
    element type of every value, from onnx's shape inference."""
    from onnx.inliner import inline_local_functions

    inferred = shape_inference.infer_shapes(inline_local_functions(model))
    types: dict[str, int] = {}
    nodes: list[onnx.NodeProto] = []
    graphs = [inferred.graph]
    while graphs:
        g = graphs.pop()
        types.update({v.name: v.type.tensor_type.elem_type
                      for v in (*g.value_info, *g.input, *g.output)})  # fmt: skip
        types.update({i.name: i.data_type for i in g.initializer})
        nodes.extend(g.node)
        graphs.extend(a.g for n in g.node for a in n.attribute if a.type == a.GRAPH)
    return nodes, types


_ALWAYS_CPU_INPUTS = frozenset({"Shape", "Size"})  # (their outputs live in CPU memory)


def cpu_nodes(model: onnx.ModelProto, target: str | Target = "cuda") -> list[CpuNode]:
    """The nodes of ``model`` that onnxruntime will run on ``target``'s fallback provider (the
    CPU behind CUDA): those whose (op, element type) the target registers no kernel for.
    Each counts its copies: inputs a node on the target makes, and outputs a node on the
    target reads (graph inputs and outputs are host arrays either way, and onnxruntime
    places a constant beside the node that reads it).

    >>> import warnings, graphdsl as gd
    >>> from exporters.onnx import export, cpu_nodes
    >>> g = gd.Graph("mixed", input_types={"x": gd.TensorType(gd.int8, (4,))})
    >>> x, = g.inputs
    >>> g.output((x & 3) + 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     model = export(g, target="cuda")
    >>> [str(n).split(" (")[0] for n in cpu_nodes(model)]
    ['BitwiseAnd[INT8]']
    >>> cpu_nodes(export(g, target="cpu"), "cpu")  # no fallback behind the CPU provider
    []
    """
    tgt = TARGETS[target] if isinstance(target, str) else target
    if tgt.fallback is None:
        return []
    nodes, types = typed_nodes(model)
    on_cpu: list[tuple[onnx.NodeProto, str, list[str]]] = []
    for node in nodes:
        if node.op_type in ("Constant", *_ALWAYS_CPU_INPUTS):
            continue
        key, needed = kernel_key(node, types)
        missing = [n for n in needed if not tgt.registers(key, n)]
        if missing:
            on_cpu.append((node, key, missing))
    cpu_ids = {id(node) for node, _, _ in on_cpu}
    on_gpu = {o for node in nodes if id(node) not in cpu_ids for o in node.output}
    read_on_gpu = {i for node in nodes if id(node) not in cpu_ids for i in node.input}
    out = []
    for node, key, missing in on_cpu:
        copies = sum(1 for i in node.input if i in on_gpu)
        copies += sum(1 for o in node.output if o in read_on_gpu)
        out.append(CpuNode(node.op_type, key, tuple(missing), node.name, copies))
    return out
