"""Op costs in exported graphs (docs/formats.md "Costs", the generator's model in gen/cost.h):
FLOPs for matrix products and convolutions, 100 FLOP-equivalents per byte moved otherwise,
views free; graphs without costs stay valid for roam and for the plan runner. That the
exporter and the C++ generator agree on the same config is test_compare_generators.py's."""

import copy
import dataclasses
import os
import unittest

import support as s
from roam_torch import planned

VIEWS = {"aten.view", "aten.t", "aten.transpose", "aten.expand", "aten._reshape_alias",
         "aten.permute", "aten.unsqueeze", "aten.split", "aten.slice", "aten.select"}


class WideLinear(s.nn.Module):
    """A matmul wide enough to be compute-bound (2*M*N*K > 100 x its bytes) and a narrow head
    that is memory-bound."""

    def __init__(self):
        super().__init__()
        self.wide = s.nn.Linear(3 * 32 * 32, 1024, bias=False)
        self.head = s.nn.Linear(1024, 5)

    def forward(self, x):
        return self.head(self.wide(x.flatten(1)))


class ExporterCosts(unittest.TestCase):
    def test_every_op_has_a_cost_and_views_cost_nothing(self):
        _, graph, _, _ = s.trace(s.gpt_spec(dropout=0.25))
        names = set()
        for op in graph["ops"]:
            self.assertIsInstance(op.get("cost"), float, op)
            self.assertGreaterEqual(op["cost"], 0.0)
            if op["name"] in VIEWS:
                names.add(op["name"])
                self.assertEqual(op["cost"], 0.0, op)
            elif op["name"].endswith("_"):  # an in-place write moves bytes
                self.assertGreater(op["cost"], 0.0, op)
        self.assertGreaterEqual(len(names), 3)

    def test_a_wide_matmul_costs_its_flops_and_a_narrow_one_its_bytes(self):
        spec = dataclasses.replace(s.cnn_spec("sgd", batch=1024), image_size=32)
        _, graph, _, _ = s.trace(spec, WideLinear)
        forward = [op for op in graph["ops"] if op["phase"] == "forward"]
        mm = next(op for op in forward if op["name"] == "aten.mm")
        self.assertEqual(mm["cost"], 2.0 * 1024 * 1024 * 3072)  # M x N x K multiply-adds
        addmm = next(op for op in forward if op["name"] == "aten.addmm")
        moved = sum(t["size"] for t in graph["tensors"]
                    if addmm["id"] in t["consumers"] or t["producer"] == addmm["id"])
        self.assertEqual(moved, 4 * (5 + 1024 * 1024 + 1024 * 5 + 1024 * 5))
        self.assertEqual(addmm["cost"], 100.0 * moved)

    def test_a_transposed_convolution_counts_its_input_positions(self):
        # gen/cost.cpp's rule, read here from aten's `transposed` argument: the weight
        # [Cin, Cout, k, k] is applied at each input position (FCN-8's stride-8 upsampling).
        from roam_torch import cost
        x, w = s.torch.empty(2, 21, 28, 28), s.torch.empty(21, 21, 16, 16)
        y = s.torch.nn.functional.conv_transpose2d(x, w, stride=8)
        self.assertEqual(tuple(y.shape), (2, 21, 232, 232))
        multiply_adds = 2 * 28 * 28 * 21 * 21 * 16 * 16
        forward = (x, w, None, [8, 8], [0, 0], [1, 1], True, [0, 0], 1)
        self.assertEqual(cost.flops("aten.convolution", forward, y), 2.0 * multiply_adds)
        backward = (y, x, w, None, [8, 8], [0, 0], [1, 1], True, [0, 0], 1, [True, True, False])
        self.assertEqual(cost.flops("aten.convolution_backward", backward, (x, w)),
                         4.0 * multiply_adds)
        # Not transposed: the output's positions, as before.
        z = s.torch.empty(2, 21, 21, 21)
        plain = (y, w, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1)
        self.assertEqual(cost.flops("aten.convolution", plain, z),
                         2.0 * 2 * 21 * 21 * 21 * 21 * 16 * 16)


class GraphsWithoutCosts(unittest.TestCase):
    def test_old_files_without_costs_stay_valid(self):
        runner = planned.Runner(s.gpt_spec(dropout=0.25))
        graph = copy.deepcopy(runner.graph)
        for op in graph["ops"]:
            del op["cost"]
        d = s.temp_dir(self)
        graph_path = s.write_json(d, "old.json", graph)
        plan_path = os.path.join(d, "plan.json")
        r = s.run_roam(["evaluate", graph_path, "--order", "heuristic", "-o", plan_path])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = s.run_roam(["validate", graph_path, plan_path])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = s.run_roam(["remat", graph_path, "--budget-ratio", "1.0", "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        # The runner compares ops by id, name and phase: a graph without costs is the trace.
        result = runner.run(graph, graph_path, planned.plan_io.load_json(plan_path, "PLAN",
                                                                          "roam-plan-v1"),
                            plan_path, steps=1, roam=s.roam_binary())
        self.assertIsNone(result.difference, result.diagnosis)


if __name__ == "__main__":
    unittest.main()
