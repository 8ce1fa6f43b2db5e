#!/usr/bin/python3
"""Runs a roam plan as a real PyTorch training step: the traced aten ops in the plan's order,
every planned tensor in one preallocated arena at the plan's offset, and compares the result
with eager PyTorch (docs/torch-export.md, "Running a plan").

  roam evaluate g.json --order lescea --layout best-fit -o plan.json
  /usr/bin/python3 tools/torch_export/run_plan.py --config tiny.yaml --graph g.json \\
      --plan plan.json --steps 2 --check-eager

Exit status: 0 the planned run ran (and, with --check-eager, matches eager); 1 it does not
match eager, or a tensor was not at its planned place; 2 bad input or usage (nothing is run).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from roam_torch import cli  # noqa: E402
from roam_torch.cli import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK  # noqa: E402

PROG = "run_plan.py"


def parse_args(argv):
    p, _ = cli.model_parser(PROG, __doc__)
    p.add_argument("--graph", required=True, metavar="GRAPH",
                   help="the roam-graph-v1 export.py wrote for these model options")
    p.add_argument("--plan", required=True, metavar="PLAN", help="a roam-plan-v1 for GRAPH")
    p.add_argument("--steps", type=int, default=2, metavar="K",
                   help="training steps to run (default 2)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--check-eager", action="store_true",
                   help="also run eager PyTorch and compare loss, parameters, buffers and "
                        "optimizer state (exit 1 naming the first tensor that differs)")
    p.add_argument("--no-cudnn", action="store_true",
                   help="run eager and the plan with cuDNN off (torch.backends.cudnn.enabled = "
                        "False), so both run ATen's own CUDA kernels: with cuDNN, eager's batch "
                        "norm is cudnn_batch_norm where the trace has native_batch_norm, and "
                        "cuDNN picks convolution algorithms (TF32 among them) per call")
    p.add_argument("--seed", type=int, default=0, help="seed of the model, batch and state")
    p.add_argument("--rtol", type=float, help="relative tolerance (default: 0 on cpu, i.e. "
                   "bit-identical; 1e-4 on cuda)")
    p.add_argument("--atol", type=float, help="absolute tolerance (default 0 on cpu, 1e-6 on "
                   "cuda)")
    p.add_argument("--roam", metavar="PATH",
                   help="roam binary for `roam validate` (default: $ROAM_BINARY, "
                        "build/release/apps/roam, or roam on PATH)")
    p.add_argument("--unsafe-skip-validate", action="store_true",
                   help="run a plan without `roam validate` (tests of the runner as a judge)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = cli.parse_model_arguments(p, argv)
    if args.steps <= 0:
        p.error(f"--steps: must be a positive integer, got {args.steps}")
    return args


def _fail(message, status):
    return cli.fail(PROG, message, status)


def _mib(n):
    if n is None:
        return "n/a"
    return f"{n / 2**20:,.2f} MiB" if n >= 2**20 else f"{n / 2**10:,.2f} KiB"


def report_text(r):
    s = r.plan_summary
    st = r.stats
    lines = [
        f"graph {r.graph}: {r.ops} ops, {r.steps} steps on {r.device}",
        f"plan: theoretical peak {_mib(s.get('theoretical_peak'))}, actual peak "
        f"{_mib(s.get('actual_peak'))}, persistent {_mib(s.get('persistent_bytes'))}, "
        f"total {_mib(s.get('total_peak'))} (alignment {r.alignment})",
        f"arena: {r.arena_bytes:,} bytes ({_mib(r.arena_bytes)}), {r.arena_allocated:,} "
        "allocated with the alignment slack",
        f"ops: {st.ops_out} wrote with out=, {st.ops_copied} computed then copied into place, "
        f"{st.ops_empty} empty, {st.ops_other} views/in-place/no planned output",
        f"transient bytes per step: {st.transient_bytes_total:,} in all, at most "
        f"{st.transient_bytes_max:,} at once ({st.transient_max_op or '-'})",
    ]
    if st.ops_recomputed:
        lines.append(f"remat: {st.ops_recomputed} recomputations per step (ops with "
                     "\"recomputes\") ran into their own planned places")
    if r.random_reseeded:
        lines.append("the plan reorders random ops: both runs reseed before each one")
    if r.device.startswith("cuda"):
        lines.append(f"device peak, planned: max_memory_allocated "
                     f"{_mib(r.planned.peak_allocated)}, max_memory_reserved "
                     f"{_mib(r.planned.peak_reserved)}")
        if r.eager is not None:
            lines.append(f"device peak, eager:   max_memory_allocated "
                         f"{_mib(r.eager.peak_allocated)}, max_memory_reserved "
                         f"{_mib(r.eager.peak_reserved)}")
    losses = ", ".join(f"{float(x):.6g}" for x in r.planned.losses)
    lines.append(f"planned losses: {losses}")
    if r.eager is not None:
        counted = ", ".join(f"{v} {k}" for k, v in r.compared.items())
        how = "bit-identical" if r.tolerance == (0.0, 0.0) else \
            f"within rtol {r.tolerance[0]:g}, atol {r.tolerance[1]:g}"
        if r.difference is None:
            lines.append(f"matches eager PyTorch ({how}): the loss of every step and, after "
                         f"the last, every persistent tensor ({counted})")
        else:
            lines.append(f"DIFFERS from eager PyTorch ({how} expected): {r.difference}")
            if r.diagnosis:
                lines.append(f"first wrong value: {r.diagnosis}")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from roam_torch.plan_io import BadInput, load_json

    spec, status = cli.spec_or_status(PROG, args)
    if spec is None:
        return status

    from roam_torch import arena, planned
    from roam_torch.trace import TraceError

    if args.no_cudnn:
        import torch
        torch.backends.cudnn.enabled = False
    try:
        planned.check_device(args.device)
        graph = load_json(args.graph, "GRAPH", "roam-graph-v1")
        plan = load_json(args.plan, "PLAN", "roam-plan-v1")
        try:
            runner = planned.Runner(spec, seed=args.seed)
        except TraceError as e:
            return cli.trace_failure(PROG, spec, e)
        report = runner.run(graph, args.graph, plan, args.plan, steps=args.steps,
                            device=args.device, check_eager=args.check_eager, roam=args.roam,
                            skip_validate=args.unsafe_skip_validate, rtol=args.rtol,
                            atol=args.atol)
    except BadInput as e:
        return _fail(str(e), EXIT_BAD_INPUT)
    except arena.RunFailure as e:
        return _fail(f"the planned run failed: {e}", EXIT_FAILURE)
    if args.json:
        print(json.dumps(report.as_dict()))
    else:
        print(report_text(report))
    if report.difference is not None:
        why = f"; first wrong value: {report.diagnosis}" if report.diagnosis else ""
        return _fail(f"the planned run differs from eager PyTorch: {report.difference}{why}",
                     EXIT_FAILURE)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
