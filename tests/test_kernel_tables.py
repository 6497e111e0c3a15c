"""The kernel tables: JSON package data, read by the loader, written by the probe script."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import sys
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from onnx import TensorProto

from exporters.onnx._kernels import KernelTable, dump_kernels, load_kernels
from exporters.onnx._targets import (
    CPU_BEFORE,
    CUDA_BROKEN,
    CUDA_UNREGISTERED,
    TARGETS,
    _pairs,
    cpu_target,
    installed_onnxruntime,
)

ROOT = Path(__file__).resolve().parents[1]
TYPE_NAMES = set(TensorProto.DataType.keys())


def _file_bytes(target: str) -> bytes:
    return (resources.files("exporters.onnx") / "kernels" / f"{target}.json").read_bytes()


def _names(table: dict[str, frozenset[str]]) -> set[str]:
    return {name for types in table.values() for entry in types for name in entry.split("->")}


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "probe_ort_kernels", ROOT / "scripts" / "probe_ort_kernels.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_tables_load_once_and_feed_the_targets(target: str) -> None:
    table = load_kernels(target)
    assert isinstance(table, KernelTable)
    assert load_kernels(target) is table
    tgt = TARGETS[target]
    if target == "cpu":  # the measured table, less the pairs the installed release lacks
        assert tgt.kernels == cpu_target(installed_onnxruntime()).kernels
        if installed_onnxruntime() >= max(CPU_BEFORE):
            assert tgt.kernels is table.kernels
    else:  # what CUDA registers: the measured rows (with the kernels that failed at run
        # time: placed on the GPU all the same), the documented rows where none was measured;
        # what it runs right: that, less what failed and what broke
        assert tgt.registered is not None
        documented = load_kernels("cuda_documented").kernels
        failing = _pairs(table.provenance["excluded_run_errors"])
        for op in set(documented) | set(table.kernels):
            row = (table.kernels[op] | failing.get(op, frozenset())
                   if op in table.kernels else documented[op])  # fmt: skip
            want = row - CUDA_UNREGISTERED.get(op, frozenset())
            assert tgt.registered[op] == want, op
            assert tgt.kernels[op] == want - failing.get(op, set()) - CUDA_BROKEN.get(op, set())
        assert set(tgt.registered) == set(documented) | set(table.kernels)
        assert tgt.registers("ScatterND_add", "INT64") and not tgt.has("ScatterND_add", "INT64")
    assert len(table.kernels) > 50
    assert all(type(types) is frozenset for types in table.kernels.values())


@pytest.mark.parametrize("target", ["cpu", "cuda", "cuda_documented"])
def test_types_are_tensorproto_names(target: str) -> None:
    table = load_kernels(target)
    considered = set(table.provenance["types"])
    assert considered <= TYPE_NAMES
    assert _names(table.kernels) | _names(table.upcast_kernels) <= considered
    assert all("->" in pair for pair in table.kernels.get("Cast", ()))
    assert not any("->" in t for op, ts in table.kernels.items() if op != "Cast" for t in ts)


def test_cpu_target_per_onnxruntime_release() -> None:
    # cpu.json is measured on 1.32; on 1.31 (pyproject's floor) the pairs CPU_BEFORE lists
    # are computed as where a kernel is missing, and blocked quantization is composed
    table = load_kernels("cpu").kernels
    old, new = cpu_target((1, 31)), cpu_target((1, 32))
    assert new.kernels is table and not new.quirks
    assert old.quirk("blocked_quantize_nan") and not new.quirk("blocked_quantize_nan")
    assert new.has("Pad", "BFLOAT16") and not old.has("Pad", "BFLOAT16")
    assert new.has("MaxPool", "UINT8") and not old.has("MaxPool", "UINT8")
    assert old.has("Pad", "FLOAT") and old.has("QuantizeLinear", "FLOAT")
    for op in table:  # nothing else removed
        assert table[op] - old.kernels.get(op, frozenset()) == CPU_BEFORE[(1, 32)].get(
            op, frozenset()
        ), op


def test_cpu_provenance() -> None:
    prov = load_kernels("cpu").provenance
    assert prov["provider"] == TARGETS["cpu"].provider == "CPUExecutionProvider"
    assert prov["generator"] == "scripts/probe_ort_kernels.py"
    assert prov["method"] == "measured"
    assert (prov["opset"], prov["ir_version"]) == (21, 10)
    assert prov["graph_optimizations"] == "disabled"
    assert datetime.date.fromisoformat(prov["date"])
    # measured on an onnxruntime that pyproject.toml admits (onnxruntime>=1.31)
    measured = tuple(int(p) for p in prov["onnxruntime"].split(".")[:2])
    assert measured >= (1, 31) and prov["onnx"] == "1.23.2"
    # float Mod with fmod=0 is invalid; the reducing scatters refuse some types (bool for max
    # and min, float16 and bfloat16) and cubic Resize refuses integers at run time
    assert prov["excluded_run_errors"] == [
        "Mod[FLOAT16]", "Mod[FLOAT]", "Mod[DOUBLE]",
        "Resize_cubic[INT8]", "Resize_cubic[INT32]", "Resize_cubic[UINT8]",
        "ScatterElements_add[FLOAT16]", "ScatterElements_add[BFLOAT16]",
        "ScatterElements_max[BOOL]", "ScatterElements_max[BFLOAT16]",
        "ScatterElements_min[BOOL]", "ScatterElements_min[BFLOAT16]",
        "ScatterElements_mul[FLOAT16]", "ScatterElements_mul[BFLOAT16]",
        "ScatterND_add[FLOAT16]", "ScatterND_add[BFLOAT16]",
        "ScatterND_max[BOOL]", "ScatterND_max[FLOAT16]", "ScatterND_max[BFLOAT16]",
        "ScatterND_min[BOOL]", "ScatterND_min[FLOAT16]", "ScatterND_min[BFLOAT16]",
        "ScatterND_mul[FLOAT16]", "ScatterND_mul[BFLOAT16]",
    ]  # fmt: skip
    assert prov["notes"] and all(isinstance(n, str) for n in prov["notes"])


def test_cuda_provenance() -> None:
    prov = load_kernels("cuda").provenance
    assert prov["provider"] == TARGETS["cuda"].provider == "CUDAExecutionProvider"
    assert prov["generator"] == "scripts/probe_cuda.py" and prov["method"] == "measured"
    assert (prov["opset"], prov["ir_version"]) == (21, 10)
    assert "H200" in prov["device"] and prov["onnxruntime"] == "1.31.1"
    assert datetime.date.fromisoformat(prov["date"])
    # the measurement was cut short: these rows are still the documentation's
    documented = load_kernels("cuda_documented")
    assert prov["unmeasured_documented_rows"] == sorted(
        set(documented.kernels) - set(load_kernels("cuda").kernels)
    )
    assert "Cast" in prov["unmeasured_documented_rows"]
    # each measured difference a lowering would meet is in CUDA_BROKEN or handled by a quirk
    for name in ("Sign[FLOAT]", "QuantizeLinear[FLOAT]", "QuantizeLinear_axis[FLOAT]",
                 "Resize_linear[INT32]", "ReduceMax[INT64]", "LayerNormalization[DOUBLE]"):
        op, types = next(iter(_pairs([name]).items()))
        assert name in prov["differs"] and types <= CUDA_BROKEN[op], name
    assert prov["notes"] and all(isinstance(n, str) for n in prov["notes"])
    prov = documented.provenance
    assert prov["opset"] == 21
    assert "NOT measured" in prov["method"]
    assert "OperatorKernels.md" in prov["source"]
    assert len(prov["source_revision"]) == 40
    assert prov["notes"] and all(isinstance(n, str) for n in prov["notes"])


def test_entries_the_exporter_relies_on() -> None:
    cpu, cuda = TARGETS["cpu"], TARGETS["cuda"]
    assert cpu.has("Add", "FLOAT") and not cpu.has("Add", "FLOAT16")
    assert cpu.has_cast("FLOAT", "INT32") and cpu.has_cast("FLOAT16", "FLOAT")
    assert cpu.has("MatMul", "INT64")  # integer sums: a MatMul with ones where it exists
    assert cpu.has("Where", "INT32") and not cpu.has("Where", "BOOL")
    assert not cpu.has("Mod", "FLOAT") and cpu.has("Mod_fmod", "FLOAT")
    # structural ops need no table entry; where the table lists one, it is the word (the
    # CUDA table lists Gather's 13 types from the documentation: no float8)
    assert cpu.has("Scan", "anything") and not cuda.has("Gather", "FLOAT8E4M3FN")
    assert cuda.has("Gather", "BFLOAT16") and cuda.has("Shape", "FLOAT8E4M3FN")
    assert cpu.has("Gather", "FLOAT16") and not cpu.has("Gather", "FLOAT8E4M3FN")
    upcast = load_kernels("cpu").upcast_kernels
    assert upcast["Add"] == {"FLOAT16"}
    assert all(not types & cpu.kernels[op] for op, types in upcast.items())
    assert cuda.has("Add", "BFLOAT16") and not cuda.has("MatMul", "INT64")
    assert cuda.kernels["BitwiseAnd"] == frozenset()
    assert load_kernels("cuda").upcast_kernels == {}


@pytest.mark.parametrize("target", ["cpu", "cuda", "cuda_documented"])
def test_dump_rewrites_the_file_byte_for_byte(target: str) -> None:
    assert dump_kernels(load_kernels(target)).encode() == _file_bytes(target)


def test_probe_script_writes_the_file(probe: Any) -> None:
    """Probe results equal to the table's give the same file (given the recorded versions)."""
    table = load_kernels("cpu")
    prov = table.provenance
    types = probe.TYPES
    results: dict[str, dict[str, dict[str, str]]] = {"noopt": {}}
    for op, native in table.kernels.items():
        keys = [f"{s}->{d}" for s in types for d in types] if op == "Cast" else types
        upcast = table.upcast_kernels.get(op, frozenset())
        results["noopt"][op] = {
            t: "ok" if t in native else "ok_upcast" if t in upcast
            else "run_error" if f"{op}[{t}]" in prov["excluded_run_errors"] else "no_kernel"
            for t in keys
        }  # fmt: skip
    written = probe.kernel_table(results, prov["date"])
    versions = {"onnx": prov["onnx"], "onnxruntime": prov["onnxruntime"]}
    written = dataclasses.replace(written, provenance={**written.provenance, **versions})
    assert dump_kernels(written).encode() == _file_bytes("cpu")


def test_cuda_table_lists_every_op_the_exporter_emits() -> None:
    """Each ONNX op type named in the lowerings' source (b.node("Conv", ...), keys such as
    "Pad_reflect"; the Builder's own nodes are of these types too) has a row in cuda.json: no
    node of a target='cuda' model is assumed to run (Target.has's structural ops included),
    and a lowering that adds an op adds its row."""
    import re

    from onnx import defs

    names = {s.name for s in defs.get_all_schemas_with_history() if s.domain == ""}
    found = set()
    for path in (ROOT / "exporters/onnx/_lower").glob("*.py"):
        for literal in re.findall(r'"([A-Z][A-Za-z]*(?:_[a-z0-9]+)?)"', path.read_text()):
            if literal.split("_")[0] in names:
                found.add(literal)
    cuda = TARGETS["cuda"].registered
    assert cuda is not None
    assert {"Split", "LayerNormalization", "Gelu_tanh", "Pad_edge", "Trilu"} <= found
    assert sorted(found - set(cuda) - {"Constant"}) == []
    # the structural ops too, measured or from the documentation's lists
    assert {"Shape", "Gather", "Scan", "ConstantOfShape", "Slice", "If", "Loop"} <= set(cuda)
    # rows the exporter relies on, as the documentation lists them at opset 21 and the
    # H200 measured them
    assert cuda["LayerNormalization"] == {"BFLOAT16", "DOUBLE", "FLOAT", "FLOAT16"}
    assert cuda["LogSoftmax"] == {"DOUBLE", "FLOAT", "FLOAT16"}  # no bfloat16
    assert cuda["Conv"] == {"DOUBLE", "FLOAT", "FLOAT16"}  # [11, 21]; 22+ adds bfloat16
    assert cuda["Pad"] == cuda["Pad_reflect"] == {"BOOL", "DOUBLE", "FLOAT", "FLOAT16"}
    assert cuda["DequantizeLinear_bfloat16"] == frozenset()
    assert "FLOAT8E4M3FN" in cuda["Shape"] and "FLOAT8E4M3FN" not in cuda["Split"]
