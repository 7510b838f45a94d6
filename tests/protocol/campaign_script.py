"""A small host campaign run in a child process by the signal and interruption tests.

    python -m tests.protocol.campaign_script MODE OUT_DIR MARKER [NVML_LOG]

MODE ``sigterm``: clocks locked through the fake NVML (calls logged to NVML_LOG); at the 6th update
of side B the child writes MARKER and sleeps until the parent signals it.
MODE ``kill``: no lock; the same pause, for a SIGKILL mid-campaign.
MODE ``atexit``: locks, then leaves through sys.exit without closing anything: the interpreter's
exit hook must reset the clocks.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from protocol.clocks import LockRequest
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner
from protocol.sides import Side

from .fake_nvml import FakeNvml
from .helpers import HookedSide, host_config, small_graph_input

PAUSE_AT_CALL = 6


def config_for_tests(side_b=None):
    return host_config(sides=(Side("host", "host"), side_b or Side("host", "host")), rounds=6)


def main(argv) -> int:
    mode, out, marker = argv[0], Path(argv[1]), Path(argv[2])
    nvml_log = argv[3] if len(argv) > 3 else None
    fake = FakeNvml(log_path=nvml_log)

    def pause(call):
        if call == PAUSE_AT_CALL:
            marker.write_text("ready")
            time.sleep(120)

    if mode == "atexit":
        Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest("max"))
        marker.write_text("locked")
        sys.exit(0)
    lock = LockRequest("max") if mode == "sigterm" else None
    gpu = mode == "sigterm"
    with Instruments.open(gpu=gpu, nvml_module=fake if gpu else None, lock_request=lock,
                          sample_interval_s=0.01) as inst:
        runner = CampaignRunner(config_for_tests(HookedSide("host", pause)), RecordStore(out), inst)
        return int(runner.run([small_graph_input()]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
