#!/usr/bin/python3
"""Records one PyTorch training step (forward, cross-entropy, backward, optimizer) at aten
level over fake tensors and writes it as a roam-graph-v1 file (docs/torch-export.md).

  /usr/bin/python3 tools/torch_export/export.py --model resnet18 --batch 32 -o resnet18.json
  /usr/bin/python3 tools/torch_export/export.py --config configs/gpt2-small.yaml -o gpt2.json

Exit status: 0 success; 1 internal failure; 2 bad input or usage (nothing is written).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from roam_torch.cli import (EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, fail,  # noqa: E402
                            make_parser)
from roam_torch.options import (add_model_arguments, check_model_arguments,  # noqa: E402
                                spec_from_arguments)



def parse_args(argv):
    p = make_parser("export.py", __doc__)
    what = add_model_arguments(p)
    what.add_argument("--list", action="store_true", help="list the torchvision models")
    p.add_argument("-o", "--output", metavar="GRAPH", help="where to write the graph")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    args = p.parse_args(argv)
    if not args.list and not args.output:
        p.error("the following arguments are required: -o/--output")
    check_model_arguments(p, args)
    return args


def _fail(message, status):
    return fail("export.py", message, status)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from roam_torch import spec as specs
    from roam_torch.trace import TraceError

    if args.list:
        print("\n".join(specs.torchvision_models()))
        return EXIT_OK
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        return _fail(f"-o {args.output}: directory {out_dir} does not exist", EXIT_BAD_INPUT)
    try:
        spec = spec_from_arguments(args)
    except specs.UsageError as e:
        return _fail(str(e), EXIT_BAD_INPUT)

    from roam_torch import export_graph, io
    from roam_torch.trace import trace_step

    try:
        traced = trace_step(spec)
    except TraceError as e:
        if e.phase == "forward":  # the model rejected the requested shapes
            return _fail(f"{spec.name}: the model cannot run this input: {e}", EXIT_BAD_INPUT)
        return _fail(f"{spec.name}: tracing failed: {e}", EXIT_FAILURE)
    graph, report, _ = export_graph.build(traced)
    io.write_json_atomically(args.output, graph)
    if not args.quiet:
        print(io.summary_text(graph, report, args.output), file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
