"""CPU checks of the CUDA sources (algorithm.md §12.1, §12.3): they run in CI without a GPU.

- ``python -m engines.sssp.cuda.compile_check`` passes (nvcc, every source, every type pair, the
  fused kernel without spills);
- the control-block structs of kernels.cuh and the NumPy dtypes of workspace.py agree, field by
  field (offsets from ``offsetof`` in a host program compiled with nvcc, and sizes);
- ``engines.sssp.cuda`` imports without CuPy, and ``is_available()`` is then False;
- the pieces of the runtime that need no device (header inlining, names, the test hook, grid
  sizing formulas, generations, pointer-jumping rounds).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CUDA_DIR = REPO / "engines" / "sssp" / "cuda"
#: The graph package's CUDA source (engines/graph/device_apply.cu, moved out of CUDA_DIR by
#: 24b4079): NVRTC compiles it with the same inlined header, so the source checks cover it too.
GRAPH_DIR = REPO / "engines" / "graph"


def _runtime_sources() -> list[Path]:
    """Every .cu that runtime.read_source hands NVRTC: the engines' and the graph's."""
    return sorted(CUDA_DIR.glob("*.cu")) + sorted(GRAPH_DIR.glob("*.cu"))

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def _run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)


@needs_nvcc
@pytest.mark.slow
def test_compile_check_passes():
    proc = _run([sys.executable, "-m", "engines.sssp.cuda.compile_check"], cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for kernel in ("fused_update", "fused_compute"):
        for types in ("<int, int>", "<int, long long>"):
            line = next(ln for ln in out.splitlines() if f"{kernel}{types}" in ln)
            assert " 0 B spill stores" in line and " 0 B spill loads" in line, line
    assert "compile_check: passed" in out


def _layout_program(dtypes: dict[str, np.dtype]) -> str:
    lines = [
        "#include <cstdio>",
        "#include <cstddef>",
        '#include "kernels.cuh"',
        "int main() {",
    ]
    for cname, dtype in dtypes.items():
        lines.append(f'  std::printf("{cname} __size__ %zu\\n", sizeof({cname}));')
        for field in dtype.names:
            lines.append(
                f'  std::printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));'
            )
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@needs_nvcc
def test_control_block_layouts_match_header(tmp_path):
    from engines.sssp.cuda import workspace

    dtypes = {
        "sssp::FusedControl<int>": workspace.fused_control_dtype(np.int32),
        "sssp::FusedControl<long long>": workspace.fused_control_dtype(np.int64),
        "sssp::OperatorsControl<int>": workspace.operators_control_dtype(np.int32),
        "sssp::OperatorsControl<long long>": workspace.operators_control_dtype(np.int64),
    }
    src = tmp_path / "layout.cu"
    src.write_text(_layout_program(dtypes))
    exe = tmp_path / "layout"
    proc = _run(["nvcc", "-std=c++17", f"-I{CUDA_DIR}", "-o", str(exe), str(src)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = _run([str(exe)], timeout=60)
    assert run.returncode == 0, run.stderr
    seen = {}
    for line in run.stdout.splitlines():
        *name, field, value = line.split(" ")
        seen[(" ".join(name), field)] = int(value)
    for cname, dtype in dtypes.items():
        assert seen[(cname, "__size__")] == dtype.itemsize, cname
        for field in dtype.names:
            assert seen[(cname, field)] == dtype.fields[field][1], (cname, field)
    # The fields the spec requires (algorithm.md §5.2) are all there, with the widths it names.
    fused32 = dtypes["sssp::FusedControl<int>"]
    for name in ("candidates", "frontier", "near", "far", "invalidated"):
        assert fused32.fields[name][0].base == np.dtype(np.int32)
    assert fused32.fields["pushes"][0] == np.dtype(np.int64)
    assert fused32.fields["affected"][0] == np.dtype(np.uint64)
    assert fused32.fields["minimum"][0].base == np.dtype(np.uint64)
    assert fused32.fields["active"][0].shape == (3,)
    ops64 = dtypes["sssp::OperatorsControl<long long>"]
    assert ops64.fields["active"][0].shape == (65,)
    assert ops64.fields["invalidated"][0] == np.dtype(np.int64)


def test_package_imports_without_cupy():
    # A fresh interpreter in which `import cupy` fails, whether or not CuPy is installed here.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["cupy"] = None  # makes `import cupy` raise ImportError
        import engines.sssp.cuda as cuda
        assert cuda.is_available() is False
        from engines.errors import NotSupportedError
        from engines.sssp.cuda import runtime
        try:
            runtime.cupy_module()
        except NotSupportedError as exc:
            assert "CuPy" in str(exc)
        else:
            raise AssertionError("cupy_module() did not raise")
        print("ok")
        """
    )
    proc = _run([sys.executable, "-c", code], cwd=REPO, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_header_is_inlined_into_each_source():
    from engines.sssp.cuda import runtime

    header = (CUDA_DIR / "kernels.cuh").read_text()
    paths = _runtime_sources()
    assert GRAPH_DIR / "device_apply.cu" in paths
    for path in paths:
        code = runtime.read_source(str(path))
        assert header in code, path.name
        assert '#include "kernels.cuh"' not in code, path.name


def test_instantiation_names():
    from engines.sssp.cuda import runtime

    assert runtime.instantiation_name("fused_update", np.int32, np.int64) == "fused_update<int, long long>"
    assert runtime.instantiation_name("k", np.int32, np.int32) == "k<int, int>"
    assert {(v.name, o.name) for v, o in runtime.TYPE_PAIRS} == {("int32", "int32"), ("int32", "int64")}


def test_cooperative_launch_hook(monkeypatch):
    from engines.sssp.cuda import runtime, without_cooperative_launch

    monkeypatch.delenv(runtime.NO_COOPERATIVE_ENV, raising=False)
    assert not runtime.cooperative_launch_disabled()
    with without_cooperative_launch():
        assert runtime.cooperative_launch_disabled()
        with without_cooperative_launch():
            assert runtime.cooperative_launch_disabled()
        assert runtime.cooperative_launch_disabled()
    assert not runtime.cooperative_launch_disabled()
    monkeypatch.setenv(runtime.NO_COOPERATIVE_ENV, "1")
    assert runtime.cooperative_launch_disabled()
    monkeypatch.setenv(runtime.NO_COOPERATIVE_ENV, "0")
    assert not runtime.cooperative_launch_disabled()


def test_operators_grid_formula(monkeypatch):
    from engines.sssp.cuda import runtime

    info = runtime.DeviceInfo(0, "H200", 132, 2048, True)
    monkeypatch.setattr(runtime, "device_info", lambda device: info)
    assert runtime.operators_grid_cap(0) == 1056
    assert runtime.operators_blocks(0, 0) == 1
    assert runtime.operators_blocks(256, 0) == 1
    assert runtime.operators_blocks(257, 0) == 2
    assert runtime.operators_blocks(10**9, 0) == 1056


def test_generation_reset_rule():
    from engines.sssp.cuda import workspace

    class FakeData:
        def __init__(self):
            self.calls = 0

        def memset_async(self, value, nbytes, stream):
            assert value == 0
            self.calls += 1

    class FakeStamp:
        nbytes = 16

        def __init__(self):
            self.data = FakeData()

    ws = workspace.Workspace(0)
    ws.stamp = FakeStamp()
    assert ws.next_generation(None) == 1
    ws.advance_generation(57)
    assert ws.next_generation(None) == 58
    ws.generation = workspace.GENERATION_LIMIT
    assert ws.next_generation(None) == workspace.GENERATION_LIMIT + 1
    assert ws.stamp.data.calls == 0
    assert ws.next_generation(None) == 1  # above 2^30 - 1: every stamp zeroed first
    assert ws.stamp.data.calls == 1


def test_kernel_parameter_lists_match_launcher():
    """fused.py passes the kernel arguments positionally: count them against the signatures (a
    launch's argument tuple written in the call, or bound to a name in the same function first)."""
    import ast
    import re

    code = (CUDA_DIR / "fused.cu").read_text()
    tree = ast.parse((CUDA_DIR / "fused.py").read_text())
    launches = {}
    kernel_of = {"_launch": "fused_update", "compute": "fused_compute"}  # the function that launches each
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in kernel_of:
            bound = {node.targets[0].id: node.value for node in ast.walk(fn)
                     if isinstance(node, ast.Assign) and len(node.targets) == 1
                     and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Tuple)}
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "fn":
                    args = node.args[2]
                    args = bound[args.id] if isinstance(args, ast.Name) else args
                    launches[kernel_of[fn.name]] = len(args.elts)
    assert set(launches) == {"fused_update", "fused_compute"}
    for kernel, count in launches.items():
        sig = re.search(r"\b" + kernel + r"\((.*?)\)\s*\{", code, re.S).group(1)
        params = [p for p in sig.split(",") if p.strip()]
        assert count == len(params), (kernel, count, len(params))


#: What a source may include under NVRTC, which has no host standard library: the shared header and
#: cooperative groups; and key_sort.cu the one CUB block-level header it uses (CuPy puts its bundled
#: CCCL on NVRTC's include path; key_sort.cu compiled and passed its GPU tests so at 5fcbe7a).
_NVRTC_INCLUDES = ('#include "kernels.cuh"', "#include <cooperative_groups.h>")
_NVRTC_INCLUDES_OF = {"key_sort.cu": _NVRTC_INCLUDES + ("#include <cub/block/block_radix_sort.cuh>",)}


def test_runtime_source_has_no_host_std_headers():
    for path in [CUDA_DIR / "kernels.cuh", *_runtime_sources()]:
        for line in path.read_text().splitlines():
            s = line.strip()
            if s.startswith("#include"):
                assert s in _NVRTC_INCLUDES_OF.get(path.name, _NVRTC_INCLUDES), (path.name, s)


def _device_function_body(code: str, name: str) -> str:
    """The brace-matched body of the device function ``name`` (its first definition)."""
    import re

    start = code.index("{", re.search(r"\bvoid " + name + r"\(", code).end())
    depth = 0
    for pos in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[pos], 0)
        if depth == 0:
            return code[start:pos + 1]
    raise AssertionError(f"{name}: unbalanced braces")


def test_splits_reserve_list_slots_per_block():
    """Issue 34: the first split and the epoch split reserve their two lists' slots once per block
    and trip (block_append_split: one scan, one atomicAdd per list), never per warp (append), and
    walk whole blocks per trip so that every thread reaches the scan's barriers."""
    code = (CUDA_DIR / "kernels.cuh").read_text()
    # both splits walk their list through split_trips, which owns the trips and the reservation
    for name in ("split_frontier", "split_pile"):
        body = _device_function_body(code, name)
        assert body.count("split_trips<V>(") == 1, name
        assert "append(" not in body and "for (" not in body, name
    trips = _device_function_body(code, "split_trips")
    assert "append(" not in trips.replace("block_append_split<V>(", "")
    assert trips.count("block_append_split<V>(") == 1
    assert "for (i64 base = static_cast<i64>(blockIdx.x) * blockDim.x;" in trips
    assert "GridStride" not in trips
    helper = _device_function_body(code, "block_append_split")
    assert helper.count("block_exclusive_scan(") == 1
    assert helper.count("atomic_add(") == 2
    assert "__syncthreads();" in helper
