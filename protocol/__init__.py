"""The A/B measurement service (protocol.md): runs two engine configurations against each other,
judges the rounds, keeps the records and renders results/M7.md.

``bench/engines_cmd.py`` and ``bench/report_cmd.py`` are the command-line faces; this package
holds the parts: clocks and contamination monitors, the runner, statistics, records and report.
A campaign from Python: ``protocol.run_campaign(config, inputs, out)`` with
``protocol.campaign_config(...)`` (protocol/campaign.py, imported when first named).
"""

from __future__ import annotations

# the records' identity constants live in a leaf module, so the parts import them without
# importing this package (which names the campaign entry point: an import cycle otherwise)
from .schema import SCHEMA_VERSION, TOOL_NAME, UPDATE_REGION

_CAMPAIGN_NAMES = ("run_campaign", "campaign_config", "PendingInput")


def __getattr__(name: str):
    # the campaign entry point, imported only when named: the package stays light for its parts
    if name in _CAMPAIGN_NAMES:
        from . import campaign

        return getattr(campaign, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SCHEMA_VERSION", "TOOL_NAME", "UPDATE_REGION", *_CAMPAIGN_NAMES]
