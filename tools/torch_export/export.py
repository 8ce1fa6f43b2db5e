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

from roam_torch import cli  # noqa: E402
from roam_torch.cli import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402

PROG = "export.py"


def parse_args(argv):
    p, what = cli.model_parser(PROG, __doc__)
    what.add_argument("--list", action="store_true", help="list the torchvision models")
    p.add_argument("-o", "--output", metavar="GRAPH", help="where to write the graph")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    args = cli.parse_model_arguments(p, argv)
    if not args.list and not args.output:
        p.error("the following arguments are required: -o/--output")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from roam_torch import spec as specs

    if args.list:
        print("\n".join(specs.torchvision_models()))
        return EXIT_OK
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        return cli.fail(PROG, f"-o {args.output}: directory {out_dir} does not exist",
                        EXIT_BAD_INPUT)
    spec, status = cli.spec_or_status(PROG, args)
    if spec is None:
        return status

    from roam_torch import export_graph, io
    from roam_torch.trace import TraceError, trace_step

    try:
        traced = trace_step(spec)
    except TraceError as e:
        return cli.trace_failure(PROG, spec, e)
    graph, report, _ = export_graph.build(traced)
    io.write_json_atomically(args.output, graph)
    if not args.quiet:
        print(io.summary_text(graph, report, args.output), file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
