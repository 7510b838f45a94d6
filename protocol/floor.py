"""The fused engine's latency floor, the model (issue 34): a run of ``grid_syncs`` phases cannot
take less than ``grid_syncs x (barrier_us + chain_us)``, one grid-wide barrier and one dependent
chain of global-memory loads per phase. The constants are measured on a GPU by bench/floor.py's
micro-benchmark (bench/floor.cu); the engine table and the campaign report (section 4b, with
``perf_ab.py engines --floor``) apply this model to a run's ``Stats.grid_syncs``. Pure arithmetic:
no CUDA here, so the protocol's analysis can use it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

#: Dependent loads of one chain before its atomic: a control-block count, a list entry, a row
#: offset, the word (the shortest chain of a push iteration after its barrier).
CHAIN_DEPTH = 4


@dataclass(frozen=True)
class FloorConstants:
    """The measured constants of the floor model, and where they were measured."""

    barrier_us: float  # one grid.sync() over `blocks` blocks
    chain_us: float  # one chain of `chain_depth` dependent L2 loads and an atomic minimum
    blocks: int  # the cooperative grid they were measured on (blocks of 256 threads)
    device_name: str = ""
    phase_us: float | None = None  # barrier and chain measured together (a check, not used)
    chain_depth: int = CHAIN_DEPTH

    @property
    def per_sync_us(self) -> float:
        """The floor of one phase: one barrier plus one chain."""
        return self.barrier_us + self.chain_us

    def describe(self) -> str:
        """One line: the constants, as the engine table prints them."""
        where = f"{self.device_name}, " if self.device_name else ""
        check = f" (together: {self.phase_us:.2f} µs)" if self.phase_us is not None else ""
        return (f"floor constants ({where}{self.blocks} blocks): barrier {self.barrier_us:.2f} µs + "
                f"chain of {self.chain_depth} loads and an atomic {self.chain_us:.2f} µs = "
                f"{self.per_sync_us:.2f} µs a grid sync{check}")

    def to_dict(self) -> dict:
        return {**asdict(self), "per_sync_us": self.per_sync_us}

    @classmethod
    def from_dict(cls, record: dict) -> "FloorConstants":
        """The constants of a ``to_dict()`` record (an engine table's JSON row)."""
        return cls(**{f.name: record[f.name] for f in fields(cls) if f.name in record})


# -- the model --------------------------------------------------------------------------------------
def floor_ms(grid_syncs: int | None, constants: FloorConstants | None) -> float | None:
    """The floor of a run of ``grid_syncs`` phases, in ms (None when either is unknown)."""
    if grid_syncs is None or constants is None:
        return None
    return int(grid_syncs) * constants.per_sync_us / 1e3


def stats_floor_ms(stats, constants: FloorConstants | None) -> float | None:
    """The floor of the run ``stats`` (an engines.sssp Stats) describes: None on engines that
    have no grid syncs (operators, host)."""
    return floor_ms(getattr(stats, "grid_syncs", None), constants)


def over_floor(measured_ms: float | None, floor: float | None) -> float | None:
    """measured / floor, or None when either is missing or the floor is 0."""
    if measured_ms is None or not floor:
        return None
    return measured_ms / floor


__all__ = ["CHAIN_DEPTH", "FloorConstants", "floor_ms", "over_floor", "stats_floor_ms"]
