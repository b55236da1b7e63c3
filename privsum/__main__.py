"""``python -m privsum``: the command line (``python -m privsum --help`` lists the commands and their options).

A command is one entry of `COMMANDS`: its name and the module that implements it. The module
defines ``COMMAND_HELP`` (one line), ``add_arguments(parser)`` (the command's options, on an
`argparse.ArgumentParser`) and ``run(arguments) -> int`` (the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["COMMANDS", "build_parser", "main"]

#: ``(command name, implementing module)``; adding a command is adding one entry here.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("demo", "privsum.demo"),
    ("shuffler", "privsum.serve.cli:SHUFFLER"),
    ("analyzer", "privsum.serve.cli:ANALYZER"),
    ("simulate", "privsum.serve.cli:SIMULATE"),
    ("protocol-file", "privsum.serve.cli:PROTOCOL_FILE"),
)


def _command_module(target: str) -> object:
    """The object implementing a command: a module, or ``module:attribute`` for one of several in a module."""
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m privsum`` parser: one subcommand per entry of `COMMANDS`; its help lists every command's options."""
    parser = argparse.ArgumentParser(
        prog="python -m privsum",
        description="privsum: shuffle-model differential privacy. `python -m privsum COMMAND --help` details a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    usages = []
    for name, module_name in COMMANDS:
        module = _command_module(module_name)
        command = commands.add_parser(name, help=module.COMMAND_HELP, description=module.COMMAND_HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
        usages.append(command.format_usage().strip().removeprefix("usage: "))
    parser.epilog = "commands and their options:\n" + "\n".join(f"  {usage}" for usage in usages)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's arguments) and run the command; the exit status."""
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command is None:
        parser.print_usage(sys.stderr)
        print("python -m privsum: error: a command is required (see --help)", file=sys.stderr)
        return 2
    return arguments.run(arguments)


if __name__ == "__main__":
    sys.exit(main())
