#!/usr/bin/python3
"""Compares two roam-graph-v1 files of the same training step, e.g. the C++ generator's
(`roam export-graph CONFIG -o A.json`) and a PyTorch trace (export.py ... -o B.json).

  /usr/bin/python3 tools/torch_export/compare.py --roam build/release/apps/roam A.json B.json

Prints op counts (total and per phase), the program-order theoretical peak and persistent
bytes from `roam evaluate --order program --json`, the op names whose counts differ, and the
summed op costs (`ops[].cost`, FLOP-equivalents; total, per phase, and the op names whose
summed costs differ by more than the cost tolerance; absent costs count 0).

Op counts are compared as written, and also "comparable", without aten.detach and Adam's
step-counter ops (aten._local_scalar_dense, and add_ on a 0-dim optimizer_state input), which
graphs from other sources may model differently (docs/torch-export.md): the generator emits
AccumulateGrad's one detach per parameter of a loss.backward() step, which an autograd.grad
trace has none of, and graphs traced under a Python dispatch mode carry detach artifacts and
the host-side counter.
Exit status: 0 when the op count as written and the theoretical peak agree within --tolerance
(relative to B), 1 when they do not, 2 on bad input.
"""

import argparse
import collections
import json
import subprocess
import sys


def evaluate(roam, path):
    r = subprocess.run([roam, "evaluate", path, "--order", "program", "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"roam evaluate {path} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def op_counts(graph):
    return collections.Counter(op["name"] for op in graph["ops"])


def host_or_artifact_ops(graph):
    """Ids of ops excluded from the comparable count (see the module docstring)."""
    inputs_of = collections.defaultdict(list)
    for t in graph["tensors"]:
        for c in t.get("consumers", []):
            inputs_of[c].append(t)
    out = set()
    for op in graph["ops"]:
        name = op["name"]
        if name in ("aten.detach", "aten._local_scalar_dense"):
            out.add(op["id"])
        elif name == "aten.add_":
            data = [t for t in inputs_of[op["id"]] if t.get("kind") != "control"]
            if len(data) == 1 and data[0].get("producer") is None and \
                    data[0].get("kind") == "optimizer_state" and data[0]["size"] <= 8:
                out.add(op["id"])
    return out


def phase_counts(graph):
    return collections.Counter(op.get("phase", "") for op in graph["ops"])


def costs_by(graph, key):
    """Summed ops[].cost per key(op) (absent costs count 0)."""
    out = collections.defaultdict(float)
    for op in graph["ops"]:
        out[key(op)] += float(op.get("cost", 0.0))
    return dict(out)


def compare(roam, path_a, path_b, tolerance=0.10, cost_tolerance=0.001):
    """Returns a dict with both summaries, relative differences and per-op differences."""
    ga, gb = load(path_a), load(path_b)
    sa, sb = evaluate(roam, path_a), evaluate(roam, path_b)
    ca, cb = op_counts(ga), op_counts(gb)
    diffs = sorted(((name, ca[name], cb[name]) for name in set(ca) | set(cb)
                    if ca[name] != cb[name]), key=lambda d: (-abs(d[1] - d[2]), d[0]))

    def rel(a, b):
        return (a - b) / b if b else float("inf") if a else 0.0

    comparable_a = sa["ops"] - len(host_or_artifact_ops(ga))
    comparable_b = sb["ops"] - len(host_or_artifact_ops(gb))
    result = {
        "a": {"path": path_a, "ops": sa["ops"], "comparable_ops": comparable_a,
              "theoretical_peak": sa["theoretical_peak"],
              "persistent_bytes": sa["persistent_bytes"], "phases": dict(phase_counts(ga))},
        "b": {"path": path_b, "ops": sb["ops"], "comparable_ops": comparable_b,
              "theoretical_peak": sb["theoretical_peak"],
              "persistent_bytes": sb["persistent_bytes"], "phases": dict(phase_counts(gb))},
        "ops_rel_diff": rel(sa["ops"], sb["ops"]),
        "comparable_ops_rel_diff": rel(comparable_a, comparable_b),
        "peak_rel_diff": rel(sa["theoretical_peak"], sb["theoretical_peak"]),
        "op_differences": [{"op": n, "a": a, "b": b} for n, a, b in diffs],
        "tolerance": tolerance,
    }
    for side, g in (("a", ga), ("b", gb)):
        result[side]["cost"] = sum(costs_by(g, lambda op: "").values())
        result[side]["phase_costs"] = costs_by(g, lambda op: op.get("phase", ""))
        result[side]["has_costs"] = all("cost" in op for op in g["ops"])
    result["cost_rel_diff"] = rel(result["a"]["cost"], result["b"]["cost"])
    na, nb = costs_by(ga, lambda op: op["name"]), costs_by(gb, lambda op: op["name"])
    result["cost_differences"] = sorted(
        ({"op": n, "a": na.get(n, 0.0), "b": nb.get(n, 0.0),
          "rel_diff": rel(na.get(n, 0.0), nb.get(n, 0.0))} for n in set(na) | set(nb)
         if abs(rel(na.get(n, 0.0), nb.get(n, 0.0))) > cost_tolerance),
        key=lambda d: (-abs(d["a"] - d["b"]), d["op"]))
    result["cost_tolerance"] = cost_tolerance
    result["within_tolerance"] = (abs(result["ops_rel_diff"]) <= tolerance and
                                  abs(result["peak_rel_diff"]) <= tolerance)
    return result


def format_text(r):
    mib = 1 << 20
    lines = [
        f"{'':22}{'A':>16}{'B':>16}{'(A-B)/B':>10}",
        f"{'ops':22}{r['a']['ops']:>16}{r['b']['ops']:>16}{r['ops_rel_diff']:>10.1%}",
        f"{'comparable ops':22}{r['a']['comparable_ops']:>16}{r['b']['comparable_ops']:>16}"
        f"{r['comparable_ops_rel_diff']:>10.1%}",
    ]
    for phase in sorted(set(r["a"]["phases"]) | set(r["b"]["phases"])):
        lines.append(f"{'  ' + phase:22}{r['a']['phases'].get(phase, 0):>16}"
                     f"{r['b']['phases'].get(phase, 0):>16}")
    lines.append(f"{'theoretical peak MiB':22}{r['a']['theoretical_peak'] / mib:>16.1f}"
                 f"{r['b']['theoretical_peak'] / mib:>16.1f}{r['peak_rel_diff']:>10.1%}")
    lines.append(f"{'persistent MiB':22}{r['a']['persistent_bytes'] / mib:>16.1f}"
                 f"{r['b']['persistent_bytes'] / mib:>16.1f}")
    if r["a"]["has_costs"] or r["b"]["has_costs"]:
        lines.append(f"{'cost (FLOP-eq.)':22}{r['a']['cost']:>16.4g}{r['b']['cost']:>16.4g}"
                     f"{r['cost_rel_diff']:>10.3%}")
        for phase in sorted(set(r["a"]["phase_costs"]) | set(r["b"]["phase_costs"])):
            lines.append(f"{'  ' + phase:22}{r['a']['phase_costs'].get(phase, 0):>16.4g}"
                         f"{r['b']['phase_costs'].get(phase, 0):>16.4g}")
        if r["cost_differences"]:
            lines.append(f"summed costs that differ by more than {r['cost_tolerance']:.1%} "
                         "(A, B):")
            for d in r["cost_differences"]:
                lines.append(f"  {d['op']:40} {d['a']:>12.4g} {d['b']:>12.4g}")
    if r["op_differences"]:
        lines.append("op counts that differ (A, B):")
        for d in r["op_differences"]:
            lines.append(f"  {d['op']:40} {d['a']:>6} {d['b']:>6}")
    verdict = "within" if r["within_tolerance"] else "NOT within"
    lines.append(f"{verdict} {r['tolerance']:.0%} on op count and theoretical peak")
    lines.insert(0, f"A = {r['a']['path']}\nB = {r['b']['path']}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="compare.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--roam", required=True, help="the roam executable")
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("a")
    p.add_argument("b")
    args = p.parse_args(argv)
    try:
        r = compare(args.roam, args.a, args.b, args.tolerance)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(r) if args.json else format_text(r))
    return 0 if r["within_tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
