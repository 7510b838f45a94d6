"""``make cuda-check``'s entry point: ``python -m engines.cuda_check`` runs
``engines.sssp.cuda.compile_check`` with Ctrl-C handled like every other command (one line, exit
130; engines/interrupt.py).

The check's own module cannot take SIGINT over early enough: ``python -m
engines.sssp.cuda.compile_check`` imports ``engines.sssp`` and ``engines.sssp.cuda`` first
(NumPy, the engines' API), before a line of the module runs. ``engines/__init__.py`` loads its
names lazily, so here the guard comes before anything heavy.
"""

from engines import interrupt

interrupt.guard(__name__, "cuda-check")

from engines.sssp.cuda.compile_check import main  # noqa: E402  (after the guard, on purpose)

if __name__ == "__main__":
    interrupt.run(main)
