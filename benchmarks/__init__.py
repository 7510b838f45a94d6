"""asv benchmarks (``asv.conf.json``: benchmark_dir ``benchmarks``).

The folder is the asv suite and its semantics check (``asv_semantics.py``: ``make asv-semantics``;
asv imports it while discovering the suite and finds no benchmark in it), apart from the A/B
service: not an installed package (asv loads it from ``benchmark_dir``; the project it measures is
the installed wheel, or this checkout). The engine region is timed by ``protocol.region``.

``SSSPAB_ASV_SCALE`` = ``full`` (default) | ``small`` | ``tiny`` sets the input sizes (``common``).

In an asv "existing" environment without the project installed, ``engines`` is imported from the
checkout this package lives in; an installed ``engines`` (asv's virtualenv builds one per commit,
or ``ASV_PYTHONPATH`` set by ``make asv-compare``; asv drops ``PYTHONPATH``) always wins.
"""

import sys
from pathlib import Path

try:
    import engines  # noqa: F401
except ImportError:  # pragma: no cover - depends on how asv was started
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
