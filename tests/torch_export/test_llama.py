"""The llama family against PyTorch: the C++ generator (`roam export-graph`) and the trace of
the same config (roam_torch/llama.py, the forward and the loss under
torch.autocast("cpu", dtype=torch.bfloat16)) record the same ops in the same order with the
same output sizes, so the program-order peak is the same; the exporter reads the llama keys
and training.precision as the generator does.

configs/llama-tiny.yaml: two layers, grouped-query attention, bf16-mixed, the unfused
attention (PyTorch 1.13 has no scaled_dot_product_attention to trace). A few seconds.
"""

import json
import os
import sys
import unittest

import torch
import torch.nn.functional as F
import yaml

import support as s

sys.path.insert(0, s.TOOL_DIR)
import compare  # noqa: E402
from roam_torch import spec as specs  # noqa: E402
from roam_torch import trace as tracing  # noqa: E402

CONFIGS = os.path.join(s.SOURCE_DIR, "configs")
TOLERANCE = 0.05  # the bound on ops and peak; the graphs agree exactly


def write_config(test, preset, model=None, training=None):
    with open(os.path.join(CONFIGS, preset), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc["model"].update(model or {})
    doc.setdefault("training", {}).update(training or {})
    path = os.path.join(s.temp_dir(test), preset)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f)
    return path


def device_ops(path):
    """(phase, name, fresh output sizes) per op in program order, without aten.detach (the
    generator's AccumulateGrad detaches; the trace uses torch.autograd.grad)."""
    with open(path, encoding="utf-8") as f:
        g = json.load(f)
    outputs = {}
    for t in g["tensors"]:
        if t.get("producer") is not None and t["kind"] != "control":
            outputs.setdefault(t["producer"], []).append(
                (t["size"], t.get("alias_of") is not None))
    ops = {o["id"]: o for o in g["ops"]}
    return [(ops[i]["phase"], ops[i]["name"], outputs.get(i, [])) for i in g["program_order"]
            if ops[i]["name"] != "aten.detach"]


@unittest.skipUnless(s.ON_1_13, "the C++ generator's op tables are PyTorch 1.13's dispatch "
                     "sequence (2.x has view for _reshape_alias, lerp_ in Adam)")
class LlamaGeneratorMatchesTrace(unittest.TestCase):
    def test_llama_tiny_bf16_mixed_is_the_traced_step_op_for_op(self):
        self.check_against_trace(write_config(self, "llama-tiny.yaml"), casts=40)

    def test_fp32_multi_head_shorter_than_the_tables_is_the_traced_step_op_for_op(self):
        # No autocast (no casts at all), no repeat_kv, the tables and mask sliced.
        self.check_against_trace(write_config(
            self, "llama-tiny.yaml", model={"n_layer": 1, "n_kv_head": 4, "seq_len": 8},
            training={"precision": "fp32", "optimizer": "sgd", "momentum": 0.9}), casts=0)

    def test_llama_tiny_bf16_master_is_the_traced_step_op_for_op(self):
        # The model in bfloat16, float32 masters stepped with float32 gradient copies and
        # copied back: RMSNorm's, the softmax's and the loss's casts in the forward pass, one
        # gradient cast per weight in the optimizer.
        self.check_against_trace(write_config(
            self, "llama-tiny.yaml", training={"precision": "bf16-master"}), casts=20)

    def check_against_trace(self, config, casts):
        d = s.temp_dir(self)
        generated, traced = os.path.join(d, "generated.json"), os.path.join(d, "traced.json")
        r = s.run_roam(["export-graph", config, "-o", generated])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = s.run_export_main(["--config", config, "-o", traced, "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)

        a, b = device_ops(generated), device_ops(traced)
        self.assertEqual(len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            self.assertEqual(x, y, f"op {i} of {len(b)}")
        names = [name for _, name, _ in b]
        # Autocast's casts are in both: weights, activations and the loss input.
        if casts:
            self.assertGreater(names.count("aten._to_copy"), casts)
        else:
            self.assertNotIn("aten._to_copy", names)

        result = compare.compare(s.roam_binary(), generated, traced, tolerance=TOLERANCE,
                                 cost_tolerance=0.001)
        report = compare.format_text(result)
        self.assertTrue(result["within_tolerance"], report)
        self.assertEqual(result["peak_rel_diff"], 0.0, report)
        self.assertEqual(result["comparable_ops_rel_diff"], 0.0, report)
        self.assertEqual(result["cost_differences"], [], report)

    def test_fused_attention_needs_pytorch_2(self):
        config = write_config(self, "llama-tiny.yaml", model={"attention": "sdpa", "n_layer": 1})
        r = s.run_export_main(["--config", config, "-o", os.path.join(s.temp_dir(self), "g.json"),
                               "-q"])
        if hasattr(F, "scaled_dot_product_attention"):
            self.assertEqual(r.returncode, 0, r.stderr)
        else:  # 1.13: a clear refusal, not a silently different graph
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("attention: math", r.stderr)


class LlamaSpec(unittest.TestCase):
    def test_presets_have_llama2s_parameter_counts(self):
        published = {"llama-7b.yaml": 6_738_415_616, "llama-13b.yaml": 13_015_864_320,
                     "llama-70b.yaml": 68_976_648_192}
        for preset, count in published.items():
            spec = specs.load_config(os.path.join(CONFIGS, preset))
            self.assertEqual(spec.precision, "bf16-mixed", preset)
            with tracing._parameters_on_meta():
                model = tracing.build_model(spec)
            self.assertEqual(sum(p.numel() for p in model.parameters()), count, preset)
            self.assertTrue(all(p.dtype == torch.float32 for p in model.parameters()), preset)

    def test_bad_keys_name_the_file_and_the_key(self):
        cases = [
            ("llama-tiny.yaml", {"n_kv_head": 3}, {}, "model.n_kv_head"),
            ("llama-tiny.yaml", {}, {"precision": "fp8"}, "training.precision"),
            ("llama-tiny.yaml", {"dtype": "bfloat16"}, {}, "model.dtype"),
            ("gpt2-small.yaml", {}, {"precision": "bf16-mixed"}, "training.precision"),
            ("llama-tiny.yaml", {"dropout": 0.1}, {}, "model.dropout"),
        ]
        for preset, model, training, key in cases:
            path = write_config(self, preset, model, training)
            with self.assertRaises(specs.UsageError) as caught:
                specs.load_config(path)
            self.assertIn(path, str(caught.exception))
            self.assertIn(key, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
