"""bench/sweep_report.py's writing of the report (its numbers and plots: tests/bench/test_sweep.py):
sweep.md, or the file ``to`` names, is written whole or not at all."""

from __future__ import annotations

import pytest

from bench import sweep_report


class _Store:
    def __init__(self, root):
        self.root = root

    def read_sweep(self) -> dict:
        return {"graphs": {"g": {}}}


@pytest.fixture
def rendered(monkeypatch, tmp_path):
    """render_sweep with its records, plots and template replaced: the writing alone is under test."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / sweep_report.TEMPLATE).write_text("# the sweep of {{ graphs }} ({{ plots }})\n")
    monkeypatch.setattr(sweep_report, "TEMPLATE_DIR", templates)
    monkeypatch.setattr(sweep_report, "SweepStore", _Store)
    monkeypatch.setattr(sweep_report, "draw_graph_plot", lambda graph, entries, path: path)
    monkeypatch.setattr(sweep_report, "context",
                        lambda sweep, crossover, plots: {"graphs": ", ".join(sweep["graphs"]),
                                                         "plots": plots[0]["path"]})
    out = tmp_path / "out"
    out.mkdir()
    return out


EXPECTED = "# the sweep of g (plots/sweep-g.png)\n"


def test_the_report_is_written_beside_the_records_or_where_asked(rendered, tmp_path):
    assert sweep_report.render_sweep(rendered, crossover={"entries": []}) == rendered / "sweep.md"
    assert (rendered / "sweep.md").read_text() == EXPECTED
    elsewhere = tmp_path / "report.md"
    assert sweep_report.render_sweep(rendered, to=elsewhere, crossover={"entries": []}) == elsewhere
    assert elsewhere.read_text() == EXPECTED


@pytest.mark.parametrize("where", ["beside", "to"])
def test_an_interrupted_write_keeps_the_earlier_report(where, rendered, tmp_path, interrupted_write):
    to = None if where == "beside" else tmp_path / "report.md"
    interrupted_write.of(to or rendered / "sweep.md")
    with pytest.raises(OSError, match="No space left on device"):
        sweep_report.render_sweep(rendered, to=to, crossover={"entries": []})
    interrupted_write.check_kept()
