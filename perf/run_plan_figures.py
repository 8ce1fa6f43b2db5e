#!/usr/bin/python3
"""Figures of perf/RESULTS.md's "Running plans in PyTorch" section: exports one model's graph,
plans it with each baseline order (and the given layouts), runs every plan with
tools/torch_export/run_plan.py --check-eager --json, and prints one markdown row per plan.

  /usr/bin/python3 perf/run_plan_figures.py --roam build/release/apps/roam \\
      [--orders program,heuristic] [--layouts best-fit] [--steps 2] [--device cpu] \\
      -- --model resnet18 --batch 8 --image-size 64 --num-classes 10
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "tools", "torch_export")


def mib(n):
    return "n/a" if n is None else f"{n / 2**20:,.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--roam", required=True)
    p.add_argument("--orders", default="program,lescea,xla-list,xla-dfs,heuristic")
    p.add_argument("--layouts", default="best-fit")
    p.add_argument("--steps", default="2")
    p.add_argument("--device", default="cpu")
    p.add_argument("model", nargs=argparse.REMAINDER, help="export.py's model options")
    args = p.parse_args()
    model = [a for a in args.model if a != "--"]
    with tempfile.TemporaryDirectory(prefix="roam-run-plan-figures-") as d:
        graph = os.path.join(d, "graph.json")
        subprocess.run([sys.executable, os.path.join(TOOLS, "export.py"), *model, "-o", graph,
                        "-q"], check=True)
        print("| order | layout | theoretical | arena (actual peak) | persistent | transient "
              "max / per step | out= / copied ops | eager peak allocated | planned peak "
              "allocated | matches eager |  (MiB)")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for order in args.orders.split(","):
            for layout in args.layouts.split(","):
                plan = os.path.join(d, f"{order}-{layout}.json")
                subprocess.run([args.roam, "evaluate", graph, "--order", order, "--layout",
                                layout, "-o", plan], check=True, stdout=subprocess.DEVNULL)
                r = subprocess.run([sys.executable, os.path.join(TOOLS, "run_plan.py"), *model,
                                    "--graph", graph, "--plan", plan, "--steps", args.steps,
                                    "--device", args.device, "--check-eager", "--json",
                                    "--roam", args.roam], capture_output=True, text=True)
                if r.returncode not in (0, 1):
                    sys.exit(f"run_plan.py failed ({r.returncode}): {r.stderr}")
                doc = json.loads(r.stdout)
                s = doc["plan"]
                print(f"| {order} | {layout} | {mib(s['theoretical_peak'])} | "
                      f"{mib(doc['arena_bytes'])} | {mib(s['persistent_bytes'])} | "
                      f"{mib(doc['transient_bytes_max'])} / "
                      f"{mib(doc['transient_bytes_total'])} | "
                      f"{doc['ops_out']} / {doc['ops_copied']} | "
                      f"{mib(doc.get('eager_peak_allocated'))} | "
                      f"{mib(doc.get('planned_peak_allocated'))} | "
                      f"{'yes' if doc['matches_eager'] else doc['difference']} |", flush=True)


if __name__ == "__main__":
    main()
