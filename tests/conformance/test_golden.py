"""The golden corpus: its contents, its integrity checks, its generator's oracles and its replay."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engines
from conformance import golden
from conformance.mixes import MIXES
from conformance.replay import CONFIGS, replay_case
from conformance.store import CorpusCorruptError, CorpusMissingError, load_corpus, write_shard
from engines import sssp
from engines.io.cache import file_sha256

from conformance import oracles as O
from .golden_helpers import corpus_copy, edit_meta, rewrite_consistently


@pytest.fixture(scope="module")
def corpus():
    c = load_corpus(golden.DEFAULT_CORPUS)
    yield c
    c.close()


# -- what the corpus holds ------------------------------------------------------------------------


def test_corpus_size_and_coverage(corpus):
    cases = corpus.cases
    assert len(cases) >= 500
    assert corpus.manifest["total_bytes"] < 5_000_000
    names = {c["name"] for c in cases}
    assert len(names) == len(cases)
    for preset in ("random-tiny", "random-small", "random-medium", "grid-small", "grid-medium", "noncanonical"):
        for mix in MIXES:
            assert any(n.startswith(preset + ".") and n.endswith("." + mix) for n in names), (preset, mix)
    # non-canonical inputs that really are non-canonical, and whose update keeps some tie parents
    perturbed = [c for c in cases if c["input_tree"] == "perturbed"]
    assert sum(c["noncanonical_parents"] > 0 for c in perturbed) >= 100
    assert sum(not c["expect"]["compute_parents_same"] for c in perturbed) >= 20
    # packing: the boundary at n = 65538, distance-only updates, W of G_t differing from G_t+1's
    by_name = {c["name"]: c for c in cases}
    assert by_name["packing.boundary_at_limit"]["expect"]["packed_parents"] is True
    assert by_name["packing.boundary_above_limit"]["expect"]["packed_parents"] is False
    heavy = by_name["packing.heavy_edge_deleted"]["expect"]
    assert heavy["packed_parents"] is False and heavy["compute_packed_parents"] is True
    assert by_name["packing.boundary_above_perturbed"]["noncanonical_parents"] > 0
    assert by_name["packing.boundary_above_perturbed"]["expect"]["compute_parents_same"]
    assert all(c["n_after"] >= 65538 for c in cases if not c["expect"]["packed_parents"])
    # fixtures: K = 1..5, growth, empty batch, delete-all, int64 offsets, forced delta
    assert {c["K"] for c in cases} >= {1, 2, 3, 4, 5}
    assert any(c["expect"]["batch"]["inserted_vertices"] > 0 for c in cases)
    empty = by_name["fixtures.empty_batch"]["expect"]
    assert empty["batch"]["inserted_edges"] == empty["batch"]["deleted_edges"] == 0 and empty["affected"] == 0
    assert by_name["fixtures.delete_all"]["m_after"] == 0
    assert sum(c["offset_dtype"] == "int64" for c in cases) >= 10
    assert sum(c["delta"] > 0 for c in cases) >= 10
    assert by_name["fixtures.n1_empty"]["n"] == 1


def test_stored_arrays_have_engine_dtypes(corpus):
    for case in corpus.cases[::37]:
        arrays = corpus.arrays(case)
        assert arrays["d_out"].dtype == np.int64 and arrays["p_out"].dtype == np.int32
        assert arrays["d_in"].dtype == np.int64 and arrays["p_in"].dtype == np.int32
        assert arrays["d_out"].shape == (case["n_after"],)


# -- integrity ---------------------------------------------------------------------------------------


def test_missing_manifest_is_missing_corpus(tmp_path):
    with pytest.raises(CorpusMissingError, match="generate"):
        load_corpus(tmp_path)


def test_one_flipped_byte_is_a_corrupt_corpus(tmp_path):
    copy = corpus_copy(tmp_path)
    path = copy / "fixtures.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorpusCorruptError, match="fixtures.npz: sha256"):
        load_corpus(copy)


def test_missing_shard_is_a_corrupt_corpus(tmp_path):
    copy = corpus_copy(tmp_path)
    (copy / "packing.npz").unlink()
    with pytest.raises(CorpusCorruptError, match="packing.npz: missing"):
        load_corpus(copy)


def test_manifest_case_list_must_match_the_shard(tmp_path):
    copy = corpus_copy(tmp_path)
    rewrite_consistently(copy, "fixtures.npz",
                         lambda m: edit_meta(m, "fixtures.empty_batch", lambda c: c.update(name="fixtures.renamed")))
    with pytest.raises(CorpusCorruptError, match="case list"):
        load_corpus(copy)


def test_shards_are_written_deterministically(tmp_path):
    members = {"b": np.arange(5), "a/x": np.array([1, -1], dtype=np.int32)}
    write_shard(tmp_path / "one.npz", members)
    write_shard(tmp_path / "two.npz", dict(reversed(list(members.items()))))
    assert file_sha256(tmp_path / "one.npz") == file_sha256(tmp_path / "two.npz")
    with np.load(tmp_path / "one.npz") as shard:
        assert shard["a/x"].dtype == np.int32 and list(shard["b"]) == [0, 1, 2, 3, 4]


# -- the replay's exact comparison -------------------------------------------------------------------


def test_replay_catches_a_consistently_rewritten_wrong_answer(tmp_path):
    copy = corpus_copy(tmp_path)
    name = "grid-small.s01.uniform_unsafe"
    target = {}

    def edit(members):
        d = members[f"cases/{name}/d_out"].copy()
        v = int(np.flatnonzero(d < O.INF)[-1])
        d[v] += 1
        target["v"] = v
        members[f"cases/{name}/d_out"] = d

    rewrite_consistently(copy, "grid-small.npz", edit)
    corpus = load_corpus(copy)  # every digest is valid again
    case = next(c for c in corpus.cases if c["name"] == name)
    outcome = replay_case(corpus, case, CONFIGS["host"])
    corpus.close()
    assert not outcome.ok
    assert outcome.first_vertex == target["v"]
    assert any(f"update distances differ at vertex {target['v']}" in line for line in outcome.mismatches)
    assert any(f"compute distances differ at vertex {target['v']}" in line for line in outcome.mismatches)


def test_replay_catches_a_dtype_change_and_a_counter(tmp_path):
    copy = corpus_copy(tmp_path)
    name = "fixtures.duplicate_deletions"

    def edit(members):
        members[f"cases/{name}/p_out"] = members[f"cases/{name}/p_out"].astype(np.int64)
        edit_meta(members, name, lambda c: c["expect"].update(affected=c["expect"]["affected"] + 1))

    rewrite_consistently(copy, "fixtures.npz", edit)
    corpus = load_corpus(copy)
    case = next(c for c in corpus.cases if c["name"] == name)
    outcome = replay_case(corpus, case, CONFIGS["host"])
    corpus.close()
    text = "\n".join(outcome.mismatches)
    assert "update parents: dtype int32, expected int64" in text
    assert "affected: expected" in text


def test_replay_of_every_packing_case_on_host(corpus):
    for case in corpus.cases:
        if case["name"].startswith("packing."):
            outcome = replay_case(corpus, case, CONFIGS["host"])
            assert outcome.ok, outcome.mismatches


# -- generation: the oracles have teeth and the stored corpus is what the generator makes --------------


@pytest.mark.slow
def test_fixture_and_packing_shards_regenerate_identically(tmp_path):
    specs = [s for s in golden.catalogue() if s.shard in ("fixtures.npz", "packing.npz")]
    manifest = golden.generate(tmp_path, specs=specs, progress=False)
    stored = load_corpus(golden.DEFAULT_CORPUS).manifest
    for name in ("fixtures.npz", "packing.npz"):
        assert manifest["files"][name]["sha256"] == stored["files"][name]["sha256"], name


def _spec(name):
    return next(s for s in golden.catalogue() if s.name == name)


@pytest.mark.parametrize("name", ["noncanonical.s01.targeted", "random-small.s02.uniform_safe",
                                  "packing.boundary_above_perturbed"])
def test_generation_rejects_a_wrong_parent(monkeypatch, name):
    """A host engine that returns one wrong (still tight-looking) parent must not reach the corpus."""
    from engines.sssp import host

    real = host.update

    def faulty(graph, distances, parents, plan, changes, **engine_args):
        report = real(graph, distances, parents, plan, changes, **engine_args)
        reach = np.flatnonzero((distances < O.INF) & (parents >= 0))
        v = int(reach[-1])
        parents[v] = (parents[v] + 1) % graph.num_vertices
        return report

    monkeypatch.setattr(host, "update", faulty)
    with pytest.raises(golden.GenerationError, match="parents"):
        golden.build_case(_spec(name))


def test_generation_rejects_a_wrong_counter(monkeypatch):
    from engines.sssp import host

    real = host.update

    def miscounting(*args, **engine_args):
        report = real(*args, **engine_args)
        return dataclasses.replace(report, invalidated=report.invalidated + 1)

    monkeypatch.setattr(host, "update", miscounting)
    with pytest.raises(golden.GenerationError, match="invalidated"):
        golden.build_case(_spec("grid-small.s00.targeted"))


def test_reference_apply_matches_hand_semantics():
    """docs/algorithm.md §3.3 by hand on the generator's graphs: first alive copy deleted, upsert of
    the first copy, append order, growth."""
    g = golden.HAND
    applied = O.ref_apply(g.ref, [1, 1, 5], [2, 5, 7], [[2], [9], [4]], [1, 3, 9], [2, 3, 0])
    assert applied.summary == dict(inserted_edges=2, updated_edges=1, deleted_edges=2, ignored_deletions=1,
                                   inserted_vertices=2, num_vertices_after=8)
    # row 1 was [2 (w1), 3 (w4), 2 (w3)]: the first 2 deleted, the remaining copy (3) upserted to 2, 5 appended
    assert applied.graph.rows[1] == [(3, (4,)), (2, (2,)), (5, (9,))]
    # the old first copy (w 1) and the new first copy (w 2) are different entries: 2 > 1 is an increase
    assert applied.weight_increased[:, 0].tolist() == [True, False, False]
    graph = engines.Graph.from_csr(g.row_ptr, g.col_ind, g.weights)
    summary, delta = graph.apply(engines.Batch([1, 1, 5], [2, 5, 7], [[2], [9], [4]], [1, 3, 9], [2, 3, 0]))
    assert dataclasses.asdict(summary) == applied.summary
    assert np.array_equal(graph.col_ind, applied.graph.csr()[1])
    assert np.array_equal(delta.weight_increased, applied.weight_increased)


def test_replayed_host_result_equals_a_fresh_update(corpus):
    """Replay and the public API agree on one case (no hidden state in the replay path)."""
    case = next(c for c in corpus.cases if c["name"] == "random-tiny.s04.local")
    arrays = corpus.arrays(case)
    graph = engines.Graph.from_csr(arrays["row_ptr"], arrays["col_ind"], arrays["weights"])
    r = sssp.compute(graph, case["source"], objective=case["objective"])
    assert np.array_equal(r.distances, arrays["d_in"]) and np.array_equal(r.parents, arrays["p_in"])


def test_golden_command_line(tmp_path, capsys):
    assert golden.main(["verify"]) == 0
    assert "every digest matches" in capsys.readouterr().out
    assert golden.main(["list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(load_corpus(golden.DEFAULT_CORPUS).cases)
    assert golden.main(["verify", "--corpus", str(tmp_path)]) == 77
    copy = corpus_copy(tmp_path)
    (copy / "grid-small.npz").write_bytes(b"")
    assert golden.main(["verify", "--corpus", str(copy)]) == 1
    assert "grid-small.npz" in capsys.readouterr().err


def test_package_command_dispatches(capsys):
    """``python -m conformance`` runs the corpus commands and ``compare``; ``python -m bench.golden``
    stays an alias of the corpus commands for one release."""
    from bench import golden as golden_alias
    from conformance.__main__ import main

    assert main(["verify"]) == 0
    assert "every digest matches" in capsys.readouterr().out
    assert main(["compare", "--configs", "host", "--cases", "fixtures.empty*", "--quiet"]) == 0
    assert "all equal" in capsys.readouterr().out
    assert main(["nope"]) == 2 and "unknown command" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--help"]) == 0 and "compare" in capsys.readouterr().out
    assert golden_alias.main(["verify"]) == 0
    assert golden_alias.DEFAULT_CORPUS == golden.DEFAULT_CORPUS and golden_alias.load_corpus is load_corpus
