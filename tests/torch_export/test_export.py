"""export.py end to end: the graphs it writes are valid roam-graph-v1 that `roam evaluate` plans
and `roam validate` accepts, program order is topological, phases and parameter counts are
right; bad input gets a clear message, exit status 2 and no output file."""

import json
import os
import unittest

import support as s


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


GPT_CONFIG = """\
model:
  family: gpt2
  n_layer: 2
  n_embd: 16
  n_head: 4
  seq_len: 8
  n_positions: 8
  vocab: 37
  batch: 2
  dropout: 0.1
  dtype: float32
training:
  optimizer: adam
planner:
  partition:
    node_limit: 100
"""


class ExportedGraphs(unittest.TestCase):
    def export(self, *args, subprocess=False):
        d = s.temp_dir(self)
        out = os.path.join(d, "graph.json")
        r = (s.run_export if subprocess else s.run_export_main)([*args, "-o", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote", r.stderr)
        return d, out, load(out)

    def check_valid(self, d, path, graph):
        self.assertEqual(graph["format"], "roam-graph-v1")
        self.assertTrue(s.is_topological(graph, graph["program_order"]),
                        "program order is not topological")
        phases = [graph["ops"][op]["phase"] for op in graph["program_order"]]
        first = {p: phases.index(p) for p in ("forward", "backward", "optimizer")}
        last = {p: len(phases) - 1 - phases[::-1].index(p) for p in first}
        self.assertLess(last["forward"], first["backward"])
        self.assertLess(last["backward"], first["optimizer"])
        self.assertEqual(set(phases), {"forward", "backward", "optimizer"})
        plan = os.path.join(d, "plan.json")
        r = s.run_roam(["evaluate", path, "-o", plan, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        summary = json.loads(r.stdout)
        self.assertEqual(summary["ops"], len(graph["ops"]))
        self.assertGreater(summary["theoretical_peak"], 0)
        r = s.run_roam(["validate", path, plan])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return summary

    def test_resnet18_validates_and_has_the_published_parameter_count(self):
        d, path, graph = self.export("--model", "resnet18", "--batch", "2", "--image-size", "64",
                                     subprocess=True)
        self.check_valid(d, path, graph)
        weights = [t["size"] for t in graph["tensors"]
                   if t["producer"] is None and t["kind"] == "weight"]
        self.assertEqual(sum(weights) // 4, 11_689_512)
        self.assertEqual(graph["name"], "resnet18-b2")

    def test_gpt2_config_validates(self):
        d = s.temp_dir(self)
        config = os.path.join(d, "tiny-gpt2.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(GPT_CONFIG)
        _, path, graph = self.export("--config", config)
        self.check_valid(d, path, graph)
        self.assertEqual(graph["name"], "tiny-gpt2")
        # nanoGPT's count: 2 layers of 12*e^2 + 13*e, embeddings (vocab + seq) * e, final norm.
        e, v, t, n = 16, 37, 8, 2
        expected = n * (12 * e * e + 13 * e) + (v + t) * e + 2 * e
        weights = sum(x["size"] for x in graph["tensors"]
                      if x["producer"] is None and x["kind"] == "weight")
        self.assertEqual(weights // 4, expected)

    def test_image_family_configs_trace_the_torchvision_model(self):
        d = s.temp_dir(self)
        config = os.path.join(d, "resnet18.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("model:\n  family: resnet\n  depth: 18\n  image_size: 32\n"
                    "  num_classes: 1000\n  batch: 2\ntraining:\n  optimizer: sgd\n"
                    "  momentum: 0.9\n")
        _, _, graph = self.export("--config", config)
        self.assertEqual(graph["name"], "resnet18")
        weights = [t["size"] for t in graph["tensors"]
                   if t["producer"] is None and t["kind"] == "weight"]
        self.assertEqual(sum(weights) // 4, 11_689_512)
        opt = [op["name"] for op in graph["ops"] if op["phase"] == "optimizer"]
        self.assertEqual(opt, ["aten.mul_", "aten.add_", "aten.add_"] * 62)

    def test_sgd_without_momentum_has_one_update_per_parameter(self):
        _, _, graph = self.export("--model", "alexnet", "--batch", "1", "--image-size", "64",
                                  "--optimizer", "sgd")
        opt = [op["name"] for op in graph["ops"] if op["phase"] == "optimizer"]
        self.assertEqual(opt, ["aten.add_"] * 16)  # 8 layers, weight and bias each
        self.assertNotIn("optimizer_state", {t["kind"] for t in graph["tensors"]})

    def test_batch_override_for_configs(self):
        d = s.temp_dir(self)
        config = os.path.join(d, "c.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(GPT_CONFIG.replace("n_layer: 2", "n_layer: 1"))
        _, _, g1 = self.export("--config", config)
        _, _, g3 = self.export("--config", config, "--batch", "3")
        logits = lambda g: max(t["size"] for t in g["tensors"])  # noqa: E731
        self.assertGreater(logits(g3), logits(g1))


class TorchvisionModels(unittest.TestCase):
    def test_models_that_compute_their_structure_from_tensor_values_build_fake(self):
        # RegNet derives its stage widths with torch ops and .tolist(), which fake tensors
        # cannot answer; build_fake_model builds it with meta weights instead.
        import torchvision
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
        from roam_torch import trace as tr
        from roam_torch.spec import torchvision_spec

        spec = torchvision_spec("regnet_x_400mf", batch=1)
        model = tr.build_fake_model(spec, FakeTensorMode())
        tensors = list(model.parameters()) + list(model.buffers())
        self.assertTrue(all(isinstance(t, FakeTensor) for t in tensors))
        real = torchvision.models.regnet_x_400mf()
        self.assertEqual(sum(p.numel() for p in model.parameters()),
                         sum(p.numel() for p in real.parameters()))

    def test_model_list_is_torchvision_classification_models(self):
        from roam_torch.spec import torchvision_models

        names = torchvision_models()
        for name in ("resnet18", "vit_b_16", "regnet_y_400mf", "alexnet"):
            self.assertIn(name, names)
        self.assertNotIn("fasterrcnn_resnet50_fpn", names)


class BadInput(unittest.TestCase):
    def expect_error(self, args, *fragments, output=True):
        d = s.temp_dir(self)
        out = os.path.join(d, "graph.json")
        r = s.run_export_main([*args, "-o", out] if output else args)
        self.assertEqual(r.returncode, 2, r.stderr)
        for fragment in fragments:
            self.assertIn(fragment, r.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(os.listdir(d), [], "left files behind")
        return r

    def config(self, text):
        d = s.temp_dir(self)
        path = os.path.join(d, "bad.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_unknown_model_suggests_close_names(self):
        self.expect_error(["--model", "resnet19"], "unknown torchvision", "resnet18")

    def test_non_positive_batch(self):
        self.expect_error(["--model", "resnet18", "--batch", "0"], "--batch", "positive")

    def test_unknown_optimizer(self):
        self.expect_error(["--model", "resnet18", "--optimizer", "adagrad"], "--optimizer")

    def test_missing_output(self):
        self.expect_error(["--model", "resnet18"], "-o/--output", output=False)

    def test_model_and_config_together(self):
        self.expect_error(["--model", "resnet18", "--config", "x.yaml"], "not allowed")

    def test_image_too_small_for_the_model(self):
        self.expect_error(["--model", "alexnet", "--batch", "1", "--image-size", "8"],
                          "cannot run this input")

    def test_missing_output_directory(self):
        r = s.run_export_main(["--model", "resnet18", "-o", "/nonexistent/dir/g.json"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("does not exist", r.stderr)

    def test_config_unknown_key_names_it_and_suggests(self):
        path = self.config(GPT_CONFIG.replace("n_head: 4", "n_heads: 4"))
        self.expect_error(["--config", path], path, "model.n_heads", "n_head")

    def test_config_yaml_syntax_error_has_line_and_column(self):
        path = self.config("model:\n  family: gpt2\n  n_layer: [1\n")
        self.expect_error(["--config", path], path, "YAML syntax error", "line 4, column 1")

    def test_config_embedding_not_divisible_by_heads(self):
        path = self.config(GPT_CONFIG.replace("n_head: 4", "n_head: 3"))
        self.expect_error(["--config", path], "model.n_embd", "not divisible", "n_head")

    def test_config_non_positive_dimension(self):
        path = self.config(GPT_CONFIG.replace("n_layer: 2", "n_layer: 0"))
        self.expect_error(["--config", path], "model.n_layer", "positive")

    def test_config_key_of_another_family(self):
        path = self.config(GPT_CONFIG.replace("family: gpt2", "family: resnet"))
        self.expect_error(["--config", path], "model.n_layer", "does not apply to family resnet")

    def test_config_family_without_a_pytorch_model(self):
        path = self.config("model:\n  family: bert\n  n_layer: 2\n")
        self.expect_error(["--config", path], "model.family", "bert", "no PyTorch model")

    def test_config_unknown_family(self):
        path = self.config("model:\n  family: resnett\n")
        self.expect_error(["--config", path], "model.family", "resnet")

    def test_config_key_of_another_optimizer(self):
        path = self.config(GPT_CONFIG.replace("optimizer: adam",
                                              "optimizer: adam\n  momentum: 0.9"))
        self.expect_error(["--config", path], "training.momentum",
                          "does not apply to optimizer adam")

    def test_config_unknown_optimizer(self):
        path = self.config(GPT_CONFIG.replace("optimizer: adam", "optimizer: adamm"))
        self.expect_error(["--config", path], "training.optimizer", "adam")

    def test_config_missing_file(self):
        self.expect_error(["--config", "/nonexistent.yaml"], "/nonexistent.yaml", "cannot read")

    def test_failure_leaves_an_existing_output_untouched(self):
        d = s.temp_dir(self)
        out = os.path.join(d, "graph.json")
        with open(out, "w", encoding="utf-8") as f:
            f.write("previous")
        r = s.run_export(["--model", "resnet19", "-o", out])  # a real process, end to end
        self.assertEqual(r.returncode, 2)
        with open(out, encoding="utf-8") as f:
            self.assertEqual(f.read(), "previous")
        self.assertEqual(os.listdir(d), ["graph.json"])


if __name__ == "__main__":
    unittest.main()
