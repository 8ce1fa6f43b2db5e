"""Writing graphs: atomically, so a reader never sees half a file and a failure leaves none."""

import json
import os
import tempfile


def write_json_atomically(path, doc):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".roam-graph-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def summary_text(graph, report, path):
    phases = {}
    for op in graph["ops"]:
        phases[op["phase"]] = phases.get(op["phase"], 0) + 1
    lines = [f"wrote {path}: graph {graph['name']}, {report.ops} ops "
             f"({', '.join(f'{k} {v}' for k, v in phases.items())}), "
             f"{report.tensors} tensors ({report.control_tensors} control)",
             f"  parameters: {report.weight_elements:,}"]
    costs = {}
    for op in graph["ops"]:
        costs[op["phase"]] = costs.get(op["phase"], 0.0) + op.get("cost", 0.0)
    lines.append(f"  cost: {sum(costs.values()):.4g} FLOP-equivalents "
                 f"({', '.join(f'{k} {v:.4g}' for k, v in costs.items())})")
    if report.host_ops:
        host = ", ".join(f"{k} x{v}" for k, v in sorted(report.host_ops.items()))
        lines.append(f"  host ops left out of the device graph: {host}")
    if report.kept_whole:
        lines.append(f"  kept at eager granularity: {', '.join(report.kept_whole)}")
    return "\n".join(lines)
