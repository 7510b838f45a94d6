"""The GPU's SM clock beside each batch of a stream (issue 27): whether a stream's slow stretches
are the code's or the clock's.

A stream of small updates leaves the GPU idle between its short kernels, and the driver's clock
governor may follow that duty cycle: on an H100 at 1c558f8 the medians of one 10,000-batch
luxembourg_osm stream's ten consecutive thousand-batch parts ranged from 0.366 to 0.675 ms on
the same code. ``SmClock`` reads the SM clock through NVML (one call, ``protocol.nvml.Nvml.sm_clock``)
right after each update returns, outside the timed call (the reading is in no call's time; it
lengthens the gap before the next call by one NVML call); it reads None where NVML or the device
cannot be opened (the host reference, a machine without NVML), and the record then says why. The
stream's report shows, per engine, the clock's range, the rank correlation of batch time with the
clock, and the stream in consecutive parts (median time, clock and push iterations per part).

What it said first (H100, 2d6e88f, ``bench/stream.py --graph luxembourg_osm --batches 10000``): the
SM clock read 1,980 MHz (the card's highest) after every one of the 9,990 timed batches of both
engines, while the fused engine's parts ranged from 0.366 to 0.513 ms: on that machine the drift
is not the SM clock's.
"""

from __future__ import annotations

import numpy as np

from bench.stream_tail import cell, engine_label, median_of

#: Why the host reference has no clock readings (its calls run no GPU).
NO_GPU = "no GPU: the host reference"
#: Consecutive parts of the timed batches in the report (fewer when there are fewer batches).
PARTS = 10


class SmClock:
    """Reads the SM clock of one GPU (MHz) through NVML; ``read()`` is None where it cannot."""

    def __init__(self, nvml=None, handle=None, problem: str | None = None):
        self._nvml = nvml
        self._handle = handle
        self.problem = problem  # why there are no readings (None when there are)

    @classmethod
    def open(cls, device: int | None, nvml_module=None) -> "SmClock":
        """The clock of CUDA device ``device`` (found by its PCI bus id); None for no GPU (the host
        reference). Never raises: a clock that cannot be read is a measurement without it."""
        if device is None:
            return cls(problem=NO_GPU)
        from protocol.nvml import Nvml, NvmlUnavailable

        nvml = None
        try:
            from protocol.environment import cuda_device_info

            pci = cuda_device_info(device)["pci_bus_id"]
            nvml = Nvml.load(nvml_module)
            return cls(nvml, nvml.handle(pci_bus_id=pci))
        except Exception as exc:  # noqa: BLE001 - a reading is a courtesy: never fail the stream on it
            if nvml is not None:  # opened, but the device was not found: close what was opened
                nvml.shutdown()
            return cls(problem=str(exc) if isinstance(exc, NvmlUnavailable) else f"{type(exc).__name__}: {exc}")

    def read(self) -> int | None:
        if self._nvml is None:
            return None
        return self._nvml.sm_clock(self._handle)

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.shutdown()
            self._nvml = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def parts(times_ms, clocks, warmup: int, count: int = PARTS, work=None) -> list[dict]:
    """The timed batches (after ``warmup``) in ``count`` consecutive parts of near-equal size (as
    many as there are batches, when fewer): per part its first batch's index, its batch count, the
    median time, the median and lowest clock over the batches that have a reading and, with
    ``work`` (per batch, stream_tail.work_of's tuple), the median push iterations: a stream whose
    random insertions shorten the graph's paths does less work per batch as it goes (on
    luxembourg_osm the median batch's iterations fell from 17 over the first 3,000 batches to 11
    over 10,000, H100, 1c558f8)."""
    timed = np.arange(warmup, len(times_ms))
    out = []
    for chunk in np.array_split(timed, min(count, timed.size)) if timed.size else []:
        mhz = [clocks[i] for i in chunk if clocks[i] is not None]
        part = {"first": int(chunk[0]), "batches": int(chunk.size),
                "median_ms": median_of([float(times_ms[i]) for i in chunk]),
                "sm_mhz_median": median_of(mhz), "sm_mhz_min": min(mhz) if mhz else None}
        if work is not None:  # (median_of leaves out a batch without a count)
            part["median_iterations"] = median_of([work[i][0] for i in chunk])
        out.append(part)
    return out


def clock_record(times_ms, clocks, warmup: int, problem: str | None = None, work=None) -> dict:
    """What the record keeps of one engine's clock readings: their count, range and median over the
    timed batches, the Spearman rank correlation of batch time with the clock (None with fewer
    than three readings or a constant clock or time), the consecutive parts (with ``work``, their
    median push iterations), and ``problem`` (why there are no readings)."""
    if len(times_ms) != len(clocks):
        raise ValueError("clock_record: one clock reading (or None) per batch")
    pairs = [(float(times_ms[i]), clocks[i]) for i in range(warmup, len(times_ms)) if clocks[i] is not None]
    mhz = [c for _, c in pairs]
    rho = None
    if len(pairs) >= 3 and len(set(mhz)) > 1 and len({t for t, _ in pairs}) > 1:
        from scipy.stats import spearmanr

        rho = round(float(spearmanr([t for t, _ in pairs], mhz).statistic), 3)
    if not pairs and problem is None:  # opened, but NVML answered no reading of a timed batch
        problem = "NVML gave no SM clock reading for a timed batch"
    return {"readings": len(pairs), "problem": problem if not pairs else None,
            "sm_mhz_min": min(mhz) if mhz else None, "sm_mhz_median": median_of(mhz),
            "sm_mhz_max": max(mhz) if mhz else None, "time_clock_spearman": rho,
            "parts": parts(times_ms, clocks, warmup, work=work)}


def markdown_lines(engines: dict) -> list[str]:
    """The report's lines: per engine with readings, the clock's range and its correlation with the
    batch time, then the stream in consecutive parts; engines without a clock record (records from
    before it, the host reference) are left out."""
    rows = [(engine_label(engine, run), run["clock"]) for engine, run in engines.items()
            if run.get("clock") and run["clock"]["readings"]]
    if not rows:
        return []
    lines = ["", "The GPU's SM clock, read through NVML right after each update (outside the timed call); "
             "Spearman's rank correlation of batch time with it (negative: slower batches at lower clocks):", "",
             "| engine | readings | SM MHz min | median | max | time-clock correlation |",
             "|---|---:|---:|---:|---:|---:|"]
    for engine, c in rows:
        lines.append(f"| {engine} | {c['readings']:,} | {cell(c['sm_mhz_min'])} | {cell(c['sm_mhz_median'])} | "
                     f"{cell(c['sm_mhz_max'])} | {cell(c['time_clock_spearman'], 3)} |")
    # the work column where the record has it (records from before it do not)
    worked = any("median_iterations" in p for _, c in rows for p in c["parts"])
    lines += ["", "The stream in consecutive parts (timed batches): median ms / median SM MHz"
              + (" / median push iterations" if worked else "") + " per part:", "",
              "| engine | " + " | ".join(f"from {p['first']:,}" for p in rows[0][1]["parts"]) + " |",
              "|---|" + "---:|" * len(rows[0][1]["parts"])]
    for engine, c in rows:
        lines.append(f"| {engine} | " + " | ".join(
            f"{cell(p['median_ms'], 3)} / {cell(p['sm_mhz_median'])}"
            + (f" / {cell(p.get('median_iterations'), 1)}" if worked else "") for p in c["parts"]) + " |")
    return lines


__all__ = ["NO_GPU", "PARTS", "SmClock", "clock_record", "markdown_lines", "parts"]
