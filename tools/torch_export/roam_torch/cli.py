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


def model_parser(prog, doc):
    """A Parser with the model options (options.py) both commands take; returns it and the
    required --model/--config group, to which a command may add its own alternative."""
    from .options import add_model_arguments

    p = make_parser(prog, doc)
    return p, add_model_arguments(p)


def parse_model_arguments(p, argv):
    """Parses argv, with the parser-level checks of the model options (exit 2 on error)."""
    from .options import check_model_arguments

    args = p.parse_args(argv)
    check_model_arguments(p, args)
    return args


def spec_or_status(prog, args):
    """(the StepSpec the options describe, None), or (None, exit status 2) after printing why
    the options are bad input (an unknown model, a bad config) or this PyTorch cannot trace."""
    from . import compat
    from . import spec as specs
    from .options import spec_from_arguments

    try:
        compat.check_torch_version()
    except compat.UnsupportedTorch as e:
        return None, fail(prog, str(e), EXIT_BAD_INPUT)
    try:
        return spec_from_arguments(args), None
    except specs.UsageError as e:
        return None, fail(prog, str(e), EXIT_BAD_INPUT)


def trace_failure(prog, spec, error):
    """Prints why tracing `spec` raised trace.TraceError `error`; returns the exit status: 2
    when the forward pass rejected the input's shapes (bad input), 1 for a failure after it."""
    if error.phase == "forward":
        return fail(prog, f"{spec.name}: the model cannot run this input: {error}",
                    EXIT_BAD_INPUT)
    return fail(prog, f"{spec.name}: tracing failed: {error}", EXIT_FAILURE)
