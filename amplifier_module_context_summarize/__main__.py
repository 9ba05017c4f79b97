"""``context-summarize`` / ``python -m amplifier_module_context_summarize {compact,inspect,convert,eval,bench}``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from .cli.args import OneLineParser, package_version

    parser = OneLineParser(
        prog="context-summarize" if sys.argv[0].endswith("context-summarize") else f"python -m {__package__}",
        description="Compact, inspect, evaluate and benchmark the context-summarize module offline.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    from .benchmark.cli import add_parser as add_bench
    from .cli.compact import add_parser as add_compact
    from .cli.convert import add_parser as add_convert
    from .cli.inspect import add_parser as add_inspect
    from .evaluation.cli import add_parser as add_eval

    add_compact(commands)
    add_inspect(commands)
    add_convert(commands)
    add_eval(commands)
    add_bench(commands)
    args = parser.parse_args(argv)
    from .cli.output import OutputError, report

    try:
        code: int = args.run(args)  # each subcommand's run returns its exit status
        return code
    except OutputError as exc:  # any output a subcommand did not catch itself: still one line, exit 2
        return report(exc)
    except KeyboardInterrupt:  # Ctrl-C: one line, not the tracebacks of every task it cancelled
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT, as a shell reports a command it interrupted."""


if __name__ == "__main__":
    sys.exit(main())
