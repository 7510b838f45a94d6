"""engines.config.EngineConfig: one spelling of an engine configuration (issue 30 item 1)."""

import pytest

from engines import sssp
from engines.config import EngineConfig, EngineConfigError, unavailable_reason
from engines.sssp import backends


@pytest.mark.parametrize("text, label, options", [
    ("host", "host", {"cuda_engine": "automatic"}),
    ("cuda", "cuda", {"cuda_engine": "automatic"}),
    ("cuda:automatic", "cuda", {"cuda_engine": "automatic"}),
    ("cuda:fused", "cuda:fused", {"cuda_engine": "fused"}),
    ("cuda:operators", "cuda:operators", {"cuda_engine": "operators"}),
    ("cuda:operators-host", "cuda:operators-host", {"cuda_engine": "operators", "operators_loop": "host"}),
    ("cuda:operators-device", "cuda:operators-device", {"cuda_engine": "operators", "operators_loop": "device"}),
    ("cuda:fused+vertex", "cuda:fused+vertex", {"cuda_engine": "fused", "push_expansion": "vertex"}),
    ("cuda+group", "cuda+group", {"cuda_engine": "automatic", "push_expansion": "group"}),
    ("cuda:operators-host+graph+group", "cuda:operators-host+group+graph",
     {"cuda_engine": "operators", "operators_loop": "host", "push_expansion": "group", "update_launch": "graph"}),
    (" CUDA:Fused ", "cuda:fused", {"cuda_engine": "fused"}),
])
def test_colon_form(text, label, options):
    config = EngineConfig.parse(text)
    assert config.label == label and str(config) == label
    assert config.options == options
    assert EngineConfig.parse(label) == config


@pytest.mark.parametrize("dash, colon", [
    ("cuda-fused", "cuda:fused"),
    ("cuda-operators", "cuda:operators"),
    ("cuda-operators-host", "cuda:operators-host"),
    ("cuda-automatic", "cuda"),
    ("cuda-fused-vertex", "cuda:fused+vertex"),
    ("cuda-fused-group", "cuda:fused+group"),
    ("cuda-operators-group", "cuda:operators+group"),
    ("cuda-operators-host-group", "cuda:operators-host+group"),
    ("cuda-fused-graph", "cuda:fused+graph"),
    ("cuda-operators-python", "cuda:operators+python"),
])
def test_dash_form_is_accepted_for_one_release(dash, colon):
    assert EngineConfig.parse(dash) == EngineConfig.parse(colon)
    assert EngineConfig.parse(dash).label == colon


@pytest.mark.parametrize("text", ["", "gpu", "host+group", "cuda:fused-host", "cuda:nope", "cuda:fused+wide",
                                  "cuda+group+vertex", "cuda:operators-sideways", "cuda-fused-host",
                                  "cuda:fused+", "cuda-fused+", "cuda:fused++group"])
def test_bad_spellings(text):
    with pytest.raises(EngineConfigError, match="unknown engine configuration"):
        EngineConfig.parse(text)


@pytest.mark.parametrize("value", [3, b"host", ["host"]], ids=["int", "bytes", "list"])
def test_a_spelling_that_is_not_text_is_refused(value):
    # raised AttributeError ('int' object has no attribute 'strip') or a bytes TypeError
    with pytest.raises(EngineConfigError, match=r"unknown engine configuration .*: not text"):
        EngineConfig.parse(value)


def test_invalid_fields_raise():
    with pytest.raises(EngineConfigError):
        EngineConfig("host", "fused")
    with pytest.raises(EngineConfigError):
        EngineConfig("cuda", "fused", operators_loop="host")


def test_short_name_and_expected_engine():
    assert [EngineConfig.parse(t).short_name for t in ("host", "cuda", "cuda:operators-host+vertex")] == [
        "host", "automatic", "operators-host+vertex"]
    assert [EngineConfig.parse(t).expected_engine for t in ("host", "cuda", "cuda:fused")] == ["host", None, "fused"]
    assert EngineConfig.parse("cuda:operators").effective_operators_loop == sssp.Options().operators_loop
    assert EngineConfig.parse("cuda:operators-host").effective_operators_loop == "host"


def test_options_are_valid_options():
    for text in ("cuda:fused+vertex+python", "cuda:operators-host+group+graph"):
        config = EngineConfig.parse(text)
        options = sssp.Options(**config.options)
        for key, value in config.options.items():
            assert getattr(options, key) == value


def test_host_runs_here_and_computes():
    import numpy as np

    import engines

    host = EngineConfig.parse("host")
    assert host.unavailable_reason() is None
    graph = engines.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([[3], [4]]), num_vertices=3)
    result = host.compute(graph, 0)
    assert result.backend == "host" and result.stats.engine_used == "host"
    assert list(result.to_numpy()[0]) == [0, 3, 7]


@pytest.mark.skipif(backends.cuda_available(), reason="a GPU is usable here")
def test_cuda_configs_cannot_run_without_a_gpu():
    for text in ("cuda", "cuda:fused", "cuda:operators-host"):
        assert "needs CuPy and a CUDA GPU" in EngineConfig.parse(text).unavailable_reason()
    assert unavailable_reason(["host", "cuda:fused"]).startswith("cuda:fused needs")
    assert unavailable_reason(["host"]) is None


@pytest.mark.gpu
@pytest.mark.skipif(not backends.cuda_available(), reason="needs CuPy and a CUDA GPU")
def test_operators_runs_on_every_gpu():
    assert EngineConfig.parse("cuda:operators").unavailable_reason() is None
    assert EngineConfig.parse("cuda:operators-host+vertex").unavailable_reason() is None


def test_both_cuda_engine_modules_take_the_same_arguments():
    """cuda.update / cuda.compute dispatch without a case per engine (they import without CuPy)."""
    import inspect

    from engines.sssp.cuda import fused, operators

    for name in ("update", "compute"):
        params = [list(inspect.signature(getattr(m, name)).parameters) for m in (fused, operators)]
        assert params[0] == params[1], name
        assert params[0][-2:] == ["loop", "choice"]
    from engines.sssp import cuda

    for function in (cuda.update, cuda.compute):
        assert '"operators"' not in inspect.getsource(function)


def test_conformance_configs_are_engine_configs_and_take_the_old_names():
    from conformance import compare
    from conformance.replay import CONFIGS, config_named

    for name, config in CONFIGS.items():
        assert name == (config.engine.label if config.delta is None else "host-delta1")
    old = {"cuda-fused": "cuda:fused", "cuda-operators": "cuda:operators", "cuda-operators-host": "cuda:operators-host",
           "cuda-automatic": "cuda", "cuda-fused-vertex": "cuda:fused+vertex", "cuda-operators-group": "cuda:operators+group",
           "cuda-operators-host-group": "cuda:operators-host+group", "cuda-fused-graph": "cuda:fused+graph",
           "cuda-operators-python": "cuda:operators+python", "host-delta1": "host-delta1"}
    for dash, name in old.items():
        assert config_named(dash) is CONFIGS[name]
    assert config_named("cuda:operators-host+vertex").operators_loop == "host"
    assert CONFIGS["cuda:operators"].operators_loop == "device"
    with pytest.raises(compare.UsageError, match="listed twice"):
        compare.parse_configs("cuda-fused,cuda:fused")
    with pytest.raises(compare.UsageError, match="unknown configuration"):
        compare.parse_configs("host,cuda:turbo")


def test_cli_engine_option(tmp_path, capsys):
    """engines.cli --engine: an EngineConfig spelling in place of --backend / --cuda-engine."""
    import json

    import numpy as np

    import engines
    from engines import cli
    from engines.io import mosp

    graph = engines.Graph.from_edges(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([[3], [4], [9]]),
                                     num_vertices=3)
    gdir = tmp_path / "g"
    mosp.write_csr(gdir, graph.row_ptr, graph.col_ind, graph.weights)
    code = cli.main(["compute", "--graph", str(gdir), "--source", "0", "--engine", "host", "--json",
                     "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["backend"] == "host"
    for bad in (["--engine", "cuda:turbo"], ["--engine", "host", "--backend", "host"],
                ["--engine", "cuda:fused", "--cuda-engine", "fused"]):
        assert cli.main(["compute", "--graph", str(gdir), "--source", "0", *bad, "--out", str(tmp_path / "p")]) == 2
        assert "bad input" in capsys.readouterr().err
    if not backends.cuda_available():
        assert cli.main(["compute", "--graph", str(gdir), "--source", "0", "--engine", "cuda:operators-host",
                         "--out", str(tmp_path / "q")]) == 3
        assert "CUDA GPU" in capsys.readouterr().err
