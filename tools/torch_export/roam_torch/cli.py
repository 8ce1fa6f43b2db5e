"""The command-line plumbing export.py and run_plan.py share: exit statuses, a parser whose
usage errors exit with status 2 (bad input), and the one-line error message."""

import argparse
import sys

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse with usage errors as bad input (exit 2, as every other bad input)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def make_parser(prog, doc):
    """A Parser whose description is the first paragraph of the command's docstring."""
    return Parser(prog=prog, description=doc.split("\n\n")[0],
                  formatter_class=argparse.RawDescriptionHelpFormatter)


def fail(prog, message, status):
    """Prints `PROG: error: MESSAGE` on stderr; returns status (the command's exit status)."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status
