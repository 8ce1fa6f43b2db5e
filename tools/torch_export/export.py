#!/usr/bin/python3
"""Records one PyTorch training step (forward, cross-entropy, backward, optimizer) at aten
level over fake tensors and writes it as a roam-graph-v1 file (docs/torch-export.md).

  /usr/bin/python3 tools/torch_export/export.py --model resnet18 --batch 32 -o resnet18.json
  /usr/bin/python3 tools/torch_export/export.py --config configs/gpt2-small.yaml -o gpt2.json

Exit status: 0 success; 1 internal failure; 2 bad input or usage (nothing is written).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def parse_args(argv):
    p = _Parser(prog="export.py", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", metavar="NAME",
                      help="a torchvision classification model, e.g. resnet18 (see --list)")
    what.add_argument("--config", metavar="CONFIG.yaml",
                      help="a roam YAML config (docs/configs.md): gpt2 traces the built-in "
                           "nanoGPT model, image families their torchvision model")
    what.add_argument("--list", action="store_true", help="list the torchvision models")
    p.add_argument("--batch", type=int, metavar="N",
                   help="batch size (default 32 for --model; overrides model.batch)")
    p.add_argument("--image-size", type=int, default=224, metavar="S",
                   help="input images are S x S (torchvision models; default 224)")
    p.add_argument("--num-classes", type=int, default=1000, metavar="C",
                   help="classifier outputs (torchvision models; default 1000)")
    p.add_argument("--optimizer", choices=("adam", "adamw", "sgd"),
                   help="optimizer, foreach=False (default adam; overrides training.optimizer)")
    p.add_argument("--dropout", choices=("cuda", "cpu"),
                   help="dropout as CUDA runs it (native_dropout, bool mask; the default) or as "
                        "CPU runs it (bernoulli_ on a float mask); overrides model.device")
    p.add_argument("--name", help="graph name (default: model and batch, or the config name)")
    p.add_argument("-o", "--output", metavar="GRAPH", help="where to write the graph")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    args = p.parse_args(argv)
    if not args.list and not args.output:
        p.error("the following arguments are required: -o/--output")
    if args.config is not None and (args.image_size != 224 or args.num_classes != 1000):
        p.error("--image-size and --num-classes apply to --model only")
    return args


def _fail(message, status):
    print(f"export.py: error: {message}", file=sys.stderr)
    return status


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
        if args.model is not None:
            spec = specs.torchvision_spec(
                args.model, batch=32 if args.batch is None else args.batch,
                image_size=args.image_size, optimizer=args.optimizer or "adam",
                num_classes=args.num_classes, dropout_form=args.dropout or "cuda",
                name=args.name)
        else:
            spec = specs.load_config(args.config, batch=args.batch, optimizer=args.optimizer,
                                     dropout_form=args.dropout, name=args.name)
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
