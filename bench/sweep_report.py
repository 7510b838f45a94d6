"""The sweep's report (issue 33 step 2): ``sweep.md`` and a log-log plot per graph, from the records.

``render_sweep(out)`` reads ``sweep.json`` and the campaigns' round records (``crossover.json`` is
rebuilt from them, :func:`bench.sweep.build_crossover`), draws ``plots/sweep-<graph>.png`` (time
against batch size on log-log axes: per engine and locality a line for update() and one for
compute(), the crossover marked with a vertical line) and renders ``templates/sweep.md.j2``.
No number is typed by hand: every one comes from the records.
"""

from __future__ import annotations

import math
from pathlib import Path

import jinja2

from protocol.environment import REPO_ROOT
from protocol.records import write_text

from .sweep import SweepStore, build_crossover, size_label

TEMPLATE_DIR = REPO_ROOT / "templates"
TEMPLATE = "sweep.md.j2"
REPORT = "sweep.md"
PLOTS = "plots"


def plot_name(graph: str) -> str:
    return f"sweep-{graph}.png"


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}" if abs(value) < 1_000 else f"{value:,.0f}"


def draw_graph_plot(graph: str, entries: list[dict], path: Path) -> Path:
    """Time against batch size (log-log) for one graph: update() solid, compute() dashed, one
    colour per (engine, locality), side B's whole round (apply + compute()) dotted; the crossover (if any) a dotted vertical line in that colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, e in enumerate(entries):
        colour = colours[i % len(colours)]
        points = [p for p in e["points"] if p.get("update_ms") and p.get("compute_ms")]
        if not points:
            continue
        sizes = [p["size"] for p in points]
        name = f"{e['engine']} {e['locality']}"
        ax.plot(sizes, [p["update_ms"] for p in points], "o-", color=colour, label=f"{name} update()")
        ax.plot(sizes, [p["compute_ms"] for p in points], "s--", color=colour, label=f"{name} compute()")
        whole = [(p["size"], p["apply_compute_ms"]) for p in points if p.get("apply_compute_ms")]
        if whole:
            ax.plot(*zip(*whole), ":", color=colour, linewidth=0.8, label=f"{name} apply + compute()")
        cross = e["crossover"]
        if cross["status"] == "crossover" and cross["size"]:
            ax.axvline(cross["size"], color=colour, linestyle=":", linewidth=1)
            ax.annotate(f"{cross['size']:,.0f}", (cross["size"], ax.get_ylim()[0]), color=colour, fontsize=7,
                        rotation=90, xytext=(2, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (changes)")
    ax.set_ylabel("median time per call (ms)")
    ax.set_title(f"{graph}: update() against compute() from scratch", fontsize=9)
    ax.legend(fontsize=6, loc="best")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _between(cross: dict) -> str:
    below, above = cross.get("below"), cross.get("above")
    parts = []
    for name, p in (("below", below), ("above", above)):
        if p:
            parts.append(f"{size_label(p['size'])}: {_fmt(p['ratio'])} [{_fmt(p['lo'])}, {_fmt(p['hi'])}]")
    return " / ".join(parts) if parts else "–"


def _whole(entry: dict, size: int) -> str:
    """update / (apply + compute) at ``size`` with its interval, from the entry's ``with_apply``."""
    for p in (entry.get("with_apply") or {}).get("points", []):
        if p["size"] == size:
            return f"{_fmt(p['ratio'])} [{_fmt(p['lo'])}, {_fmt(p['hi'])}]"
    return "–"


def context(sweep: dict, crossover: dict, plots: list[dict]) -> dict:
    params = sweep["parameters"]
    entries = []
    for e in crossover["entries"]:
        entries.append({
            "graph": e["graph"], "locality": e["locality"], "engine": e["engine"], "objective": e["objective"],
            "summary": e["summary"], "between": _between(e["crossover"]),
            "with_apply": (e.get("with_apply") or {}).get("summary", "–"),
            "points": [{"label": size_label(p["size"]), "update_ms": _fmt(p["update_ms"]),
                        "compute_ms": _fmt(p["compute_ms"]), "apply_compute_ms": _fmt(p.get("apply_compute_ms")),
                        "ratio": _fmt(p["ratio"]), "lo": _fmt(p["lo"]), "hi": _fmt(p["hi"]), "pairs": p["pairs"],
                        "whole": _whole(e, p["size"])}
                       for p in e["points"]],
        })
    graphs = []
    for name, info in sweep["graphs"].items():
        dropped = ", ".join(f"{size_label(d['size'])}{' ' + d['locality'] if d.get('locality') else ''} "
                            f"({d['reason']})" for d in info["dropped"]) or "none"
        verify = ", ".join(f"{engine}: {'the host reference and compute()' if how == 'host' else 'compute()'}"
                           f"{' (the host engine is the reference)' if engine.lower() == 'host' else ''}"
                           for engine, how in info["verify"].items())
        graphs.append({"name": name, "n": f"{info['n']:,}", "m": f"{info['m']:,}",
                       "sizes": ", ".join(size_label(s) for s in info["sizes"]), "dropped": dropped,
                       "verify": verify})
    return {"title_graphs": ", ".join(sweep["graphs"]), "engines": params["engines"],
            "sizes_requested": ", ".join(size_label(s) for s in params["sizes"]),
            "localities": params["localities"], "objectives": params["objectives"],
            "started_utc": sweep.get("started_utc"), "finished_utc": sweep.get("finished_utc"),
            "entries": entries, "graphs": graphs, "plots": plots, "reproduce": sweep.get("reproduce") or ""}


def render_sweep(out, *, to: Path | None = None, crossover: dict | None = None) -> Path:
    """Write ``<out>/sweep.md`` (or ``to``) and its plots from the records in ``out``
    (``crossover``: already rebuilt from them by the caller)."""
    store = SweepStore(out)
    sweep = store.read_sweep()
    if crossover is None:
        crossover = build_crossover(store, sweep)
        store.write_crossover(crossover)
    plots = []
    for graph in sweep["graphs"]:
        entries = [e for e in crossover["entries"] if e["graph"] == graph]
        path = draw_graph_plot(graph, entries, store.root / PLOTS / plot_name(graph))
        plots.append({"graph": graph, "path": f"{PLOTS}/{path.name}"})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    text = env.get_template(TEMPLATE).render(**context(sweep, crossover, plots))
    target = Path(to) if to is not None else store.root / REPORT
    write_text(target, text)
    return target


__all__ = ["render_sweep", "draw_graph_plot", "context", "plot_name", "REPORT"]
