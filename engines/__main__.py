"""``python -m engines update|compute ...``: the same command line as ``python -m engines.cli``."""

import sys

from .cli import main

sys.exit(main())
