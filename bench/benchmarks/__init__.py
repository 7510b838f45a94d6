"""asv benchmarks (``asv.conf.json``: benchmark_dir ``bench/benchmarks``).

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
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
