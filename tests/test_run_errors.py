"""run() never returns what the reference refuses, and says where: every onnxruntime error is
a RunError naming the graphdsl op and source line of the failing node; a result whose shape
is not the declared one (with the inputs' dimension names) is an error; the optimizers that
turn an error into a result are left out."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from backend import export, run
from onnx import TensorProto, helper

import graphdsl as gd
from exporters.onnx import RunError
from exporters.onnx import run as plain_run


def _positions(rows: int) -> gd.Graph:
    """Position embeddings gathered for a sequence (the Range + Gather of GPT-2's wpe)."""
    g = gd.Graph("pos", input_types={"ids": gd.TensorType(gd.int64, ("seq",))})
    with g:
        table = g.constant(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2))
        g.output(gd.ops.gather(table, gd.ops.range(0, g.inputs[0].shape[0])))
    return g


def test_gather_of_a_range_past_the_table_is_an_error() -> None:
    """onnxruntime's GatherToSliceFusion made this Gather a Slice, which clamps: a (16, 2)
    result for a value typed [seq, 2] with seq 20. It is left out of run()'s sessions."""
    g = _positions(16)
    model = export(g)
    assert run(model, [np.zeros(16, np.int64)])[0].shape == (16, 2)
    with pytest.raises(RunError, match=r"gather at test_run_errors.py:\d+: .*out of range"):
        run(model, [np.zeros(20, np.int64)])
    with pytest.raises(RunError, match="index 16 is out of range for axis 0 of size 16"):
        run(g, [np.zeros(20, np.int64)])


def test_an_output_of_another_shape_than_declared_is_an_error() -> None:
    # a model (not graphdsl's) that declares [n] but returns the first 3 elements
    start, end = (helper.make_tensor(k, TensorProto.INT64, [1], [v]) for k, v in
                  (("s", 0), ("e", 3)))  # fmt: skip
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
    graph = helper.make_graph(
        [node], "clamps", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], [start, end],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    np.testing.assert_array_equal(plain_run(model, [np.ones(3, np.float32)])[0], [1, 1, 1])
    with pytest.raises(RunError, match=r"output 'y': onnxruntime returned shape \(3,\), but "
                                       r"the model declares \['n'\] with \{'n': 5\}"):  # fmt: skip
        plain_run(model, [np.ones(5, np.float32)])


def test_a_conv_of_an_empty_image_names_the_conv_and_says_why() -> None:
    """onnxruntime's CPU Conv refuses an empty spatial axis that the reference gives an empty
    result for (a known gap); the error names the conv's line although onnxruntime's NCHWc
    layout renamed the node ("<output>_nchwc")."""
    g = gd.Graph("c", input_types={"x": gd.TensorType(gd.float32, ("n", 3, "h", 5))})
    y = gd.ops.conv2d(g.inputs[0], np.ones((4, 3, 3, 3), np.float32), padding=1, stride=2,
                      input_layout="NCHW")  # fmt: skip
    g.output(y)
    xs = [np.zeros((2, 3, 0, 5), np.float32)]
    assert gd.evaluate(g, xs)[0].shape == (2, 4, 0, 3)
    with pytest.raises(RunError, match=r"conv2d at test_run_errors.py:\d+: onnxruntime's kernel "
                       r"refuses the empty spatial size \(0,5\)"):  # fmt: skip
        plain_run(export(g, target="cpu"), xs)
