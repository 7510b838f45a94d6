"""The slack layout's commit, on the host (``ENGINES_APPLY_LAYOUT=slack``; kernels in device_apply.cu).

A slack set (device_graph.py) keeps each row in a room of its own, so a commit edits the touched
rows where they are instead of laying both sides out again. What the host decides, before
anything is enqueued, and without reading anything back:

- **the target and what it must copy first** (``choose``): of the owned spares, the one closest
  to the current set (device_graph.sync_kind): it holds the current state already, or the state
  before the current set's commit (copy that commit's rows), or the state after its own commit
  from the current one (copy its own commit's rows back: the benchmark's restore-then-update), or
  anything else (copy every row);
- **room for the rows that move**: a row that outgrows its room takes ``slack_capacity`` entries
  at its side's tail (device_apply.cu), so a commit may move the tail by at most
  ``worst_growth`` (every touched row moving); the target reserves the current tail plus that;
- **a compaction** when the tail has run far past the edges (``COMPACT_AT``): the packed
  layout's kernels lay the rows out tight again (their O(n + m), once in a while).

The tail the host knows is an upper bound until the commit's record arrives (device_apply.cu
REC_TAIL), which the next commit always waits for (``PendingCommit.expire``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import device_graph

#: A compaction once the tail passes this many times the edges (and COMPACT_MIN more): the room
#: left behind by rows that moved is then at least half the edges.
COMPACT_AT = 1.5
COMPACT_MIN = 4096
#: A new slack set gets an eighth more entries than the commit needs: the tail moves commit after
#: commit, and a set that only just fits would be made again at the next one.
HEADROOM_SHIFT = 3


def slack_capacity(length: int) -> int:
    """The room a row takes at the tail (device_apply.cu slack_capacity)."""
    return int(length) + (int(length) >> 2) + 2


def worst_growth(m_old: int, insertions: int, events: int, longest: int) -> int:
    """The most a commit can move a side's tail: every touched row (at most ``events``) moving to
    the tail with its slack, their new lengths summing to at most the edges after the commit, and
    to at most ``events`` rows of ``longest`` (no row is longer) plus the insertions."""
    events, insertions = int(events), int(insertions)
    lengths = min(int(m_old) + insertions, events * int(longest) + insertions)
    return lengths + (lengths >> 2) + 2 * events


@dataclass
class SlackChoice:
    """A slack commit's plan on the host."""

    target: object  # device_graph.CsrBuffers written
    kind: str  # device_graph.SYNC_KINDS, or "compact"
    need: int  # the target's tail after the commit is at most this
    dirty: int  # the target's entries from here on were room before the commit
    slots: int  # sorted key slots a side of this commit's plan (set by the plan)
    insertions: int = 0  # the batch's
    # the rows kinds: (sorted keys whose rows are copied first, their slots a side, the serial of
    # their buffer), taken when the choice is made (the commit marks its target unknown before it
    # plans); None for the other kinds
    listed: tuple | None = None

    @property
    def capturable(self) -> bool:
        """Whether a captured commit serves it: the steady kinds, whose launches do not depend on
        the tails the host knows (a full copy or a compaction is launched one by one)."""
        return self.kind in ("same", "rows_of_source", "rows_of_target")


def choose(dgraph, events, slots: int) -> SlackChoice:
    """The target set of a commit of ``events`` on ``dgraph`` (slack) and how it is brought up to
    date; grows (allocates) what it needs, changes nothing else. ``slots``: the sorted key slots a
    side the commit will keep (the reserved event capacity for a captured commit)."""
    cur = dgraph.current
    n_after = int(events.n_after)
    m_old = int(cur.num_edges)
    m_up = m_old + int(events.num_insertions)
    k, offset = cur.num_weights, cur.offset_dtype
    growth = worst_growth(m_old, events.num_insertions, events.size, cur.longest_ub)
    compact = (not cur.slack or cur.lineage is None
               or cur.tail_ub > COMPACT_AT * m_up + COMPACT_MIN
               or cur.tail_ub + growth > offset_limit(offset))  # room past what the offsets hold
    if compact:
        # room for the compacted rows (at most m_up) and the next commits' moves
        limit = offset_limit(offset)
        target = dgraph.target(n_after, min(m_up + growth, limit), k, offset,
                               room=min(m_up + growth + (m_up >> HEADROOM_SHIFT), limit))
        kind = "compact"
        need = m_up
    else:
        need = cur.tail_ub + growth
        target = dgraph.target(n_after, need, k, offset, source=cur,
                               room=min(need + (need >> HEADROOM_SHIFT), offset_limit(offset)))
        kind = device_graph.sync_kind(target, cur)
    target.keep_touched(slots)
    listed = None
    if kind != "compact":
        kind = device_graph.sync_kind(target, cur)  # keep_touched may have dropped the target's list
        owner = cur if kind == "rows_of_source" else target if kind == "rows_of_target" else None
        if owner is not None:
            listed = (owner.touched, owner.touched_slots, owner.touched_serial)
    return SlackChoice(target, kind, int(need), int(target.tail_ub), int(slots), int(events.num_insertions),
                       listed)


def offset_limit(offset_dtype) -> int:
    """The largest position a row offset of this type holds."""
    return int(np.iinfo(np.dtype(offset_dtype)).max)


def published(choice: SlackChoice, source) -> None:
    """After the commit's work is enqueued: what the target now holds."""
    target = choice.target
    target.parent = source.state
    target.lineage = device_graph.next_lineage() if choice.kind == "compact" else source.lineage
    target.state = device_graph.next_state()
    target.tail_ub = min(choice.need, target.m_cap)
    target.longest_ub = source.longest_ub + choice.insertions  # a row grows by its insertions at most
    target.touched_slots = choice.slots


def failed(choice: SlackChoice) -> None:
    """A commit that raised after it may have written its target: nothing of it is known."""
    target = choice.target
    target.state = target.parent = target.lineage = None
    target.tail_ub = target.m_cap
    target.touched_slots = 0


__all__ = ["COMPACT_AT", "COMPACT_MIN", "HEADROOM_SHIFT", "SlackChoice", "choose", "failed", "offset_limit", "published", "slack_capacity",
           "worst_growth"]
