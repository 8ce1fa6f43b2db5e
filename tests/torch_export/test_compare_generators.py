"""The C++ generator (`roam export-graph CONFIG`) and the PyTorch trace of the same config
agree within 10% on op count and on program-order theoretical peak (GPT-2 with few layers,
ResNet-18 at a small batch, the segmentation presets, whose peaks are equal).
docs/torch-export.md lists the differences and the full-size figures.

Op costs (ops[].cost, FLOP-equivalents, gen/cost.h's model in both) agree within
COST_TOLERANCE per op name, per phase and in total. The one difference is native_batch_norm,
which the exporter records as also writing the running statistics (more bytes moved).

Op counts are compared as written. The one op kind whose count differs is aten.detach, by
exactly the number of parameter tensors: the generator models `loss.backward()`, whose
AccumulateGrad dispatches one `new_grad.detach()` per parameter, and the exporter
`torch.autograd.grad`, which has no AccumulateGrad.

These tests need configs/ and `roam export-graph`, which come with the generator; in a tree
without configs/gpt2-small.yaml they are skipped with that reason.
"""

import os
import subprocess
import sys
import unittest

import yaml

import support as s

sys.path.insert(0, s.TOOL_DIR)
import compare  # noqa: E402

CONFIGS = os.path.join(s.SOURCE_DIR, "configs")
COST_TOLERANCE = 0.001  # relative


@unittest.skipUnless(os.path.exists(os.path.join(CONFIGS, "gpt2-small.yaml")),
                     "configs/ (the C++ generator's presets) is not in this tree yet")
@unittest.skipUnless(s.ON_1_13, "the C++ generator's op tables are PyTorch 1.13's dispatch "
                     "sequence (2.x has view for _reshape_alias, lerp_ in Adam)")
class GeneratorMatchesTrace(unittest.TestCase):
    def compare_config(self, preset, **model_overrides):
        d = s.temp_dir(self)
        with open(os.path.join(CONFIGS, preset), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        doc["model"].update(model_overrides)
        config = os.path.join(d, preset)
        with open(config, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f)
        generated = os.path.join(d, "generated.json")
        traced = os.path.join(d, "traced.json")
        r = s.run_roam(["export-graph", config, "-o", generated])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = s.run_export_main(["--config", config, "-o", traced, "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        result = compare.compare(s.roam_binary(), generated, traced, tolerance=0.10,
                                 cost_tolerance=COST_TOLERANCE)
        report = compare.format_text(result)
        self.assertLessEqual(abs(result["ops_rel_diff"]), 0.10, report)
        self.assertLessEqual(abs(result["peak_rel_diff"]), 0.10, report)
        self.assertTrue(result["within_tolerance"], report)
        params = sum(1 for t in compare.load(generated)["tensors"]
                     if t.get("kind") == "weight" and t.get("producer") is None)
        self.assertEqual(result["op_differences"],
                         [{"op": "aten.detach", "a": params, "b": 0}], report)
        self.assertTrue(result["a"]["has_costs"] and result["b"]["has_costs"], report)
        self.assertLessEqual(abs(result["cost_rel_diff"]), COST_TOLERANCE, report)
        self.assertEqual(result["cost_differences"], [], report)
        for phase, cost in result["b"]["phase_costs"].items():
            self.assertAlmostEqual(result["a"]["phase_costs"][phase] / cost, 1.0,
                                   delta=COST_TOLERANCE, msg=report)
        return result

    def test_gpt2_with_two_layers(self):
        r = self.compare_config("gpt2-small.yaml", n_layer=2)
        self.assertGreater(r["b"]["ops"], 400)
        self.assertEqual(r["cost_rel_diff"], 0.0)  # the same ops, bytes and FLOPs

    def test_resnet18(self):
        r = self.compare_config("resnet18.yaml", batch=4)
        self.assertGreater(r["b"]["ops"], 600)

    # The segmentation presets (roam_torch/segmentation.py against gen/segmentation.h): the
    # transposed convolutions' FLOPs, the per-pixel loss, SegNet's unpooling at a size its
    # pools floored, FCN-8's crops.
    def test_fcn8(self):
        r = self.compare_config("fcn8.yaml", batch=2, image_size=45)
        self.assertEqual(r["peak_rel_diff"], 0.0)

    def test_segnet(self):
        r = self.compare_config("segnet.yaml", batch=2, image_size=141)
        self.assertEqual(r["peak_rel_diff"], 0.0)

    def test_unet(self):
        r = self.compare_config("unet.yaml", batch=2, image_size=128)
        self.assertEqual(r["peak_rel_diff"], 0.0)


class CompareScript(unittest.TestCase):
    """compare.py on graphs that differ in known ways."""

    def test_identical_graphs_agree_and_detach_is_not_comparable(self):
        d = s.temp_dir(self)
        _, graph, _, _ = s.trace(s.gpt_spec())
        a = s.write_json(d, "a.json", graph)
        # The same graph with one extra detach view of the loss.
        extra = dict(graph, ops=graph["ops"] + [{"id": 10**6, "name": "aten.detach",
                                                 "phase": "forward"}])
        loss = next(t for t in graph["tensors"] if t["output"])
        tensors = [dict(t) for t in graph["tensors"]]
        for t in tensors:
            if t["id"] == loss["id"]:
                t["consumers"] = t["consumers"] + [10**6]
        tensors.append({"id": 10**6, "size": loss["size"], "producer": 10**6, "consumers": [],
                        "alias_of": loss["id"], "output": False, "kind": "activation"})
        extra["tensors"] = tensors
        extra["program_order"] = graph["program_order"] + [10**6]
        b = s.write_json(d, "b.json", extra)
        r = compare.compare(s.roam_binary(), b, a)
        self.assertEqual(r["a"]["ops"], r["b"]["ops"] + 1)
        self.assertEqual(r["comparable_ops_rel_diff"], 0.0)
        self.assertEqual(r["peak_rel_diff"], 0.0)
        self.assertTrue(r["within_tolerance"])
        self.assertEqual(r["op_differences"], [{"op": "aten.detach", "a": 1, "b": 0}])

    def test_command_line_exit_status(self):
        d = s.temp_dir(self)
        _, small, _, _ = s.trace(s.gpt_spec(n_layer=1))
        _, large, _, _ = s.trace(s.gpt_spec(n_layer=3))
        a = s.write_json(d, "a.json", small)
        b = s.write_json(d, "b.json", large)
        script = os.path.join(s.TOOL_DIR, "compare.py")
        run = lambda *args: subprocess.run([sys.executable, script, "--roam",  # noqa: E731
                                            s.roam_binary(), *args], capture_output=True,
                                           text=True)
        self.assertEqual(run(a, a).returncode, 0)
        r = run(a, b)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("NOT within 10%", r.stdout)
        self.assertEqual(run(a, os.path.join(d, "missing.json")).returncode, 2)


if __name__ == "__main__":
    unittest.main()
