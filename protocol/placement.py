"""The order in which a worker process allocates the two sides (docs/protocol.md §2.5, issue 32 item 2).

In a worker process the graph is one device-resident object shared by both sides; each side has
its own result (made in ``cell.CellRun._make_states``, with the snapshot every round restores) and
its own engine workspace (allocated by its first update, the guard). Whichever side allocates
first gets the first addresses of the memory pool, and a placement can favour one side for the
whole process. ``--alloc-order`` (``config.ALLOC_ORDERS``) decides the order per worker process:

- ``fixed``: A then B in every process (the behaviour before issue 32, the default);
- ``alternate``: A first in even workers, B first in odd ones;
- ``random``: drawn per worker from ``--seed`` (SHA-256, like ``--order random``).

The order is recorded in the worker's unit record (``campaign.json`` ``cells[KEY].workers[w]
.alloc_order``) and in every round it measured (column ``alloc_order``); a resumed unit replays its
recorded order (``runner.CampaignRunner._run_unit``) instead of drawing it again.
"""

from __future__ import annotations

import hashlib

#: The orders a worker allocates the sides in: roles in allocation order.
ORDERS = ("AB", "BA")


def process_order(mode: str, seed: int, process: int) -> str | None:
    """The allocation order of worker ``process`` under ``--alloc-order mode``; None for ``fixed``
    (A then B, and nothing recorded: the records of campaigns before the option)."""
    if mode == "fixed":
        return None
    if mode == "alternate":
        return ORDERS[process % 2]
    if mode == "random":
        digest = hashlib.sha256(f"{seed}/alloc-order/{process}".encode()).digest()
        return ORDERS[digest[0] % 2]
    raise ValueError(f"unknown allocation order mode {mode!r}")


def roles(order: str | None) -> tuple[str, str]:
    """The roles in the order they allocate (``None``: A then B)."""
    if order is None:
        return ("A", "B")
    if order not in ORDERS:
        raise ValueError(f"unknown allocation order {order!r} (expected one of {', '.join(ORDERS)})")
    return (order[0], order[1])


__all__ = ["ORDERS", "process_order", "roles"]
