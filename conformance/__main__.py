"""``python -m conformance COMMAND ...``: generate, verify, check and list the golden corpus
(``conformance.golden``) or replay it on engine configurations (``compare``, ``conformance.compare``)."""

from __future__ import annotations

import sys

from engines import interrupt  # standard library only: before the heavy imports

interrupt.guard(__name__, "conformance")

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)

CORPUS_COMMANDS = ("generate", "verify", "check", "list")
USAGE = ("usage: python -m conformance {generate,verify,check,list,compare} ...\n"
         "  generate  build, check and store the corpus\n"
         "  verify    check the manifest digests\n"
         "  check     regenerate and compare with the stored corpus\n"
         "  list      list the cases\n"
         "  compare   replay the corpus on engine configurations (--configs host,cuda:fused,...)\n")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return ExitCode.OK if argv else ExitCode.USAGE
    command, rest = argv[0], argv[1:]
    if command == "compare":
        from .compare import main as compare_main

        return compare_main(rest)
    if command in CORPUS_COMMANDS:
        from .golden import main as golden_main

        return golden_main(argv)
    sys.stderr.write(USAGE + f"python -m conformance: unknown command {command!r}\n")
    return ExitCode.USAGE


if __name__ == "__main__":
    interrupt.run(main)
