"""``python -m privsum demo``: the bundled end-to-end example."""

from __future__ import annotations

import sys


def _main(argv: list[str]) -> int:
    from privsum.serve.cli import COMMANDS as SERVE_COMMANDS

    if argv and argv[0] in SERVE_COMMANDS:  # the reference deployment (privsum.serve.cli)
        from privsum.serve.cli import main as serve_main

        return serve_main(argv)
    if not argv or argv[0] != "demo":
        print("usage: python -m privsum demo [--help]", file=sys.stderr)
        return 2
    from privsum.demo import main

    return main(argv[1:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
