#!/usr/bin/python3
"""Figures of perf/RESULTS.md's "Running plans in PyTorch" section: exports one model's graph,
plans it with each baseline order (and the given layouts) and, with --remat, with
`roam remat --budget-ratio R --rng-state-kept` for each ratio R (the rewritten graph and its
plan), runs every plan with tools/torch_export/run_plan.py --check-eager --json, and prints one
markdown row per plan with the whole run's wall seconds.

  /usr/bin/python3 perf/run_plan_figures.py --roam build/release/apps/roam \\
      [--orders program,heuristic] [--layouts best-fit] [--remat 0.7,0.5] [--steps 2] \\
      [--device cpu] -- --model resnet18 --batch 8 --image-size 64 --num-classes 10
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

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
    p.add_argument("--remat", default="", help="budget ratios for roam remat, e.g. 0.7,0.5")
    p.add_argument("model", nargs=argparse.REMAINDER, help="export.py's model options")
    args = p.parse_args()
    model = [a for a in args.model if a != "--"]
    with tempfile.TemporaryDirectory(prefix="roam-run-plan-figures-") as d:
        graph = os.path.join(d, "graph.json")
        subprocess.run([sys.executable, os.path.join(TOOLS, "export.py"), *model, "-o", graph,
                        "-q"], check=True)
        print("| order | layout | theoretical | arena (actual peak) | persistent | transient "
              "max / per step | out= / copied ops | recomputations (compute overhead) | "
              "eager peak allocated | planned peak allocated | matches eager | run s |  (MiB)")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")

        def row(order, layout, graph_path, plan, overhead=None):
            start = time.perf_counter()
            r = subprocess.run([sys.executable, os.path.join(TOOLS, "run_plan.py"), *model,
                                "--graph", graph_path, "--plan", plan, "--steps", args.steps,
                                "--device", args.device, "--check-eager", "--json",
                                "--roam", args.roam], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if r.returncode not in (0, 1):
                sys.exit(f"run_plan.py failed ({r.returncode}): {r.stderr}")
            doc = json.loads(r.stdout)
            s = doc["plan"]
            remat = "-" if overhead is None else \
                f"{doc['ops_recomputed']} ({overhead:.1%})"
            print(f"| {order} | {layout} | {mib(s['theoretical_peak'])} | "
                  f"{mib(doc['arena_bytes'])} | {mib(s['persistent_bytes'])} | "
                  f"{mib(doc['transient_bytes_max'])} / "
                  f"{mib(doc['transient_bytes_total'])} | "
                  f"{doc['ops_out']} / {doc['ops_copied']} | {remat} | "
                  f"{mib(doc.get('eager_peak_allocated'))} | "
                  f"{mib(doc.get('planned_peak_allocated'))} | "
                  f"{'yes' if doc['matches_eager'] else doc['difference']} | "
                  f"{seconds:.1f} |", flush=True)

        for order in args.orders.split(","):
            for layout in args.layouts.split(","):
                plan = os.path.join(d, f"{order}-{layout}.json")
                subprocess.run([args.roam, "evaluate", graph, "--order", order, "--layout",
                                layout, "-o", plan], check=True, stdout=subprocess.DEVNULL)
                row(order, layout, graph, plan)
        for ratio in filter(None, args.remat.split(",")):
            plan = os.path.join(d, f"remat-{ratio}.json")
            rewritten = os.path.join(d, f"remat-{ratio}.graph.json")
            r = subprocess.run([args.roam, "remat", graph, "--budget-ratio", ratio,
                                "--rng-state-kept", "-o", plan, "--graph-out", rewritten,
                                "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"| remat {ratio} | - | {r.stderr.strip()} |", flush=True)
                continue
            row(f"remat {ratio}", "remat's", rewritten, plan,
                json.loads(r.stdout)["compute_overhead"])


if __name__ == "__main__":
    main()
