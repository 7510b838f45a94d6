"""The A/B measurement service (protocol.md): runs two engine configurations against each other,
judges the rounds, keeps the records and renders results/M7.md.

``bench/engines_cmd.py`` and ``bench/report_cmd.py`` are the command-line faces; this package
holds the parts: clocks and contamination monitors, the runner, statistics, records and report.
"""

from __future__ import annotations

# Bumped whenever a record's layout changes; --resume and the report refuse other versions.
SCHEMA_VERSION = 1
TOOL_NAME = "ssspab perf_ab"

__all__ = ["SCHEMA_VERSION", "TOOL_NAME"]
