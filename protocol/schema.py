"""What identifies the protocol's records: their layout version, the tool that wrote them, and what
the "update" region of this code's rounds times. A leaf module (nothing of the package imported):
the parts read these without importing ``protocol`` itself.
"""

from __future__ import annotations

# Bumped whenever a record's layout changes; --resume and the report refuse other versions.
SCHEMA_VERSION = 1
TOOL_NAME = "ssspab perf_ab"
# What the "update" region of this code's rounds times, recorded per session (optional field, no
# schema change): the real update() call (batch apply, dispatch, engine) with no apply memo.
# Sessions recorded without it ran earlier code, whose rounds republished the cell's first apply;
# the report says which of the two a campaign's numbers are.
UPDATE_REGION = "user_path"

__all__ = ["SCHEMA_VERSION", "TOOL_NAME", "UPDATE_REGION"]
