"""run_plan.py, the runner that executes a roam plan in PyTorch with every planned tensor in one
arena: plans from every baseline order and layout (and the optimizer) run a tiny GPT and a
small CNN for 2 steps bit-identically to eager PyTorch; a plan with two live buffers moved onto
each other gives different numbers; bad input exits 2 having run nothing."""

import contextlib
import copy
import dataclasses
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import support as s
from roam_torch import arena, plan_io, planned

RUN_PLAN_PY = os.path.join(s.TOOL_DIR, "run_plan.py")

ORDERS = ("program", "lescea", "xla-list", "xla-dfs", "heuristic")
LAYOUTS = ("pytorch", "llfb", "best-fit")

# The commands whose plans must run and match eager: `roam CMD[0] GRAPH CMD[1:] -o PLAN`.
# One line per planner; add `roam optimize`'s modes here as they land.
PLAN_COMMANDS = [["evaluate", "--order", o, "--layout", lay] for o in ORDERS for lay in LAYOUTS]
PLAN_COMMANDS += [["evaluate", "--order", "heuristic", "--layout", "best-fit",
                   "--alignment", "64"],
                  ["optimize", "--mode", "model", "--time-limit", "2"],
                  ["optimize", "--time-limit", "10"],
                  ["optimize", "--node-limit", "8", "--no-bound-shortcut", "--time-limit", "10"],
                  # Multi-stream plans (steps): run one op at a time in step order.
                  ["optimize", "--streams", "multi", "--time-limit", "10"],
                  ["optimize", "--mode", "model", "--streams", "multi", "--time-limit", "2"]]

STEPS = 2

GPT_CONFIG = """\
model:
  family: gpt2
  n_layer: 2
  n_embd: 8
  n_head: 2
  seq_len: 5
  n_positions: 5
  vocab: 13
  batch: 2
  dropout: 0.25
  dtype: float32
training:
  optimizer: adam
"""


def export_tiny_gpt(directory):
    """Writes GPT_CONFIG into `directory` and exports its graph: (config path, graph path)."""
    config = os.path.join(directory, "tiny-gpt.yaml")
    with open(config, "w", encoding="utf-8") as f:
        f.write(GPT_CONFIG)
    graph = os.path.join(directory, "graph.json")
    r = s.run_export_main(["--config", config, "-o", graph])
    assert r.returncode == 0, r.stderr
    return config, graph


def make_plan(directory, graph_path, command, name):
    plan = os.path.join(directory, name)
    r = s.run_roam([command[0], graph_path, *command[1:], "-o", plan])
    if r.returncode != 0:
        raise AssertionError(f"roam {' '.join(command)}: {r.stdout}{r.stderr}")
    return plan


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class _Model:
    """A traced model, its graph on disk and one plan per PLAN_COMMANDS entry (made once per
    test class: tracing and planning are the slow parts)."""

    def __init__(self, runner, directory):
        self.runner = runner
        self.dir = directory
        self.graph = runner.graph
        self.graph_path = s.write_json(directory, "graph.json", self.graph)
        self.plans = [make_plan(directory, self.graph_path, c, f"plan{i}.json")
                      for i, c in enumerate(PLAN_COMMANDS)]


class PlansRunAndMatchEager:
    """Mixed into one TestCase per model: the whole matrix of planners."""

    model = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="roam-run-plan-")
        cls.model = _Model(cls.make_runner(), cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_plan(self, plan_path, **kwargs):
        m = self.model
        return m.runner.run(m.graph, m.graph_path, load(plan_path), plan_path, steps=STEPS,
                            roam=s.roam_binary(), **kwargs)

    def test_every_planner_s_plan_runs_in_the_arena_and_matches_eager_bit_for_bit(self):
        orders = set()
        for command, plan_path in zip(PLAN_COMMANDS, self.model.plans):
            with self.subTest(command=" ".join(command)):
                plan = load(plan_path)
                orders.add(tuple(plan["order"]))
                r = self.run_plan(plan_path)
                self.assertIsNone(r.difference, r.diagnosis)
                self.assertEqual(r.tolerance, (0.0, 0.0))
                self.assertEqual(len(r.planned.losses), STEPS)
                # The arena is the plan's actual peak; every op ran exactly once per step.
                self.assertEqual(r.arena_bytes, plan["summary"]["actual_peak"])
                st = r.stats
                self.assertEqual(st.ops_out + st.ops_copied + st.ops_empty + st.ops_other,
                                 len(self.model.graph["ops"]))
                self.assertGreater(st.ops_out, 0)
        # The matrix must exercise orders other than the program's.
        self.assertGreater(len(orders), 2)

    def test_multi_stream_plans_share_steps_and_bad_steps_are_refused(self):
        command = ["optimize", "--streams", "multi", "--time-limit", "10"]
        plan = load(self.model.plans[PLAN_COMMANDS.index(command)])
        steps = plan["steps"]
        self.assertEqual(len(steps), len(plan["order"]))
        self.assertLess(steps[-1] + 1, len(steps), "some ops must share a step")
        placed = plan_io.check_plan(self.model.graph, plan, "multi.json")
        self.assertEqual(len(placed), len(plan["buffers"]))
        for bad, words in (([0] * len(steps), "not after op"),
                           ([0] + [s + 2 for s in steps[1:]], "steps[1]")):
            wrong = copy.deepcopy(plan)
            wrong["steps"] = bad
            with self.assertRaises(plan_io.BadInput) as e:
                plan_io.check_plan(self.model.graph, wrong, "multi.json")
            self.assertIn(words, str(e.exception))

    def test_the_steps_change_the_state_so_the_comparison_can_fail(self):
        r = self.run_plan(self.model.plans[0])
        self.assertNotEqual(float(r.planned.losses[0]), float(r.planned.losses[1]))
        start = self.model.runner.real_inputs("cpu").tensors
        changed = sum(not s.torch.equal(a.detach(), b)
                      for a, b in zip(start, r.planned.states[-1]))
        self.assertGreater(changed, len(start) // 2)

    def test_a_buffer_moved_onto_a_live_neighbour_corrupts_the_results(self):
        m = self.model
        plan_path = m.plans[PLAN_COMMANDS.index(["evaluate", "--order", "program",
                                                 "--layout", "best-fit"])]
        bad, victim, moved = overlapping_plan(m.graph, load(plan_path))
        bad_path = s.write_json(m.dir, "overlap.json", bad)
        # roam validate rejects it ...
        with self.assertRaises(plan_io.BadInput) as e:
            self.run_plan(bad_path)
        self.assertIn("fails `roam validate`", str(e.exception))
        # ... and run anyway, the judge sees wrong numbers.
        r = self.run_plan(bad_path, skip_validate=True)
        self.assertIsNotNone(r.difference)
        # The lockstep diagnosis names one of the two storages as read or written wrong.
        self.assertRegex(r.diagnosis, rf"storage ({victim}|{moved}) at arena offset")
        self.assertRegex(r.diagnosis, "overwritten while live|with other values")

    def test_a_graph_that_calls_a_fresh_output_a_view_fails_the_placement_check(self):
        # A memory-model mistake: the graph says an aten.mm output shares its first input's
        # storage. The plan is valid for that graph, but the real output is elsewhere.
        m = self.model
        graph = copy.deepcopy(m.graph)
        mm = next(op["id"] for op in graph["ops"] if op["name"] == "aten.mm")
        out = next(t for t in graph["tensors"] if t["producer"] == mm)
        base = next(t for t in graph["tensors"] if mm in t["consumers"] and t["size"] > 0)
        out["alias_of"] = base["id"]
        d = s.temp_dir(self)
        graph_path = s.write_json(d, "graph.json", graph)
        plan_path = make_plan(d, graph_path, ["evaluate"], "plan.json")
        runner = m.runner
        original = runner.export
        runner.export = dataclasses.replace(original, graph=graph)
        try:
            with self.assertRaises(arena.PlacementError) as e:
                runner.run(graph, graph_path, load(plan_path), plan_path, steps=1,
                           roam=s.roam_binary())
        finally:
            runner.export = original
        self.assertIn(f"op {mm} (aten.mm): tensor {out['id']} is at address", str(e.exception))
        self.assertIn("the graph's memory model is wrong about this op", str(e.exception))


def overlapping_plan(graph, plan):
    """(plan with one buffer B moved onto a buffer A that is live when B is written and read
    after that (start(A) < start(B) < end(A)), where B's producer does not itself read A: B's
    write destroys a value A still has to deliver; A's id, B's id)."""
    tensors = {t["id"]: t for t in graph["tensors"]}

    def root(tid):
        while tensors[tid].get("alias_of") is not None:
            tid = tensors[tid]["alias_of"]
        return tid

    readers = {}
    for t in graph["tensors"]:
        readers.setdefault(root(t["id"]), set()).update(t["consumers"])
    buffers = sorted(plan["buffers"], key=lambda b: b["start"])
    pairs = [(a, b) for b in buffers for a in buffers
             if a["start"] < b["start"] < a["end"] and
             tensors[b["tensor"]]["producer"] not in readers[a["tensor"]]]
    if not pairs:
        raise AssertionError("no pair of buffers to overlap")
    # The largest pair: small buffers may hold indices, whose corruption crashes the run
    # instead of changing its numbers.
    a, b = max(pairs, key=lambda p: min(p[0]["size"], p[1]["size"]))
    bad = copy.deepcopy(plan)
    for x in bad["buffers"]:
        if x["tensor"] == b["tensor"]:
            x["offset"] = a["offset"]
    return bad, a["tensor"], b["tensor"]


class TinyGPT(PlansRunAndMatchEager, unittest.TestCase):
    """Tied embeddings, CUDA-form dropout (random ops), Adam."""

    @staticmethod
    def make_runner():
        return planned.Runner(s.gpt_spec(dropout=0.25))


class SmallCNN(PlansRunAndMatchEager, unittest.TestCase):
    """Convolutions, batch norm (undeclared writes of the running statistics), in-place ReLU,
    residual add_, max pool, dropout, SGD with momentum."""

    @staticmethod
    def make_runner():
        return planned.Runner(s.cnn_spec("sgd", momentum=0.9),
                              lambda: s.SmallCNN(dropout=0.3))


class CpuFormDropout(unittest.TestCase):
    """CPU-form dropout allocates its mask with empty_like and fills it with bernoulli_: the
    planned view is the mask, and the draw lands in the arena."""

    def test_empty_like_outputs_are_their_planned_views(self):
        runner = planned.Runner(s.gpt_spec(dropout=0.25, dropout_form="cpu"))
        d = s.temp_dir(self)
        graph_path = s.write_json(d, "graph.json", runner.graph)
        for command in (["evaluate"], ["evaluate", "--order", "xla-dfs", "--layout", "llfb"]):
            plan_path = make_plan(d, graph_path, command, "plan.json")
            r = runner.run(runner.graph, graph_path, load(plan_path), plan_path, steps=STEPS,
                           roam=s.roam_binary())
            self.assertIsNone(r.difference, r.diagnosis)
            self.assertGreater(r.stats.ops_empty, 0)


class TwoDropouts(s.nn.Module):
    """Two independent dropout branches: an order may run either dropout first."""

    def __init__(self):
        super().__init__()
        self.a = s.nn.Linear(3 * 8 * 8, 6)
        self.b = s.nn.Linear(3 * 8 * 8, 6)
        self.drop = s.nn.Dropout(0.5)
        self.head = s.nn.Linear(6, 5)

    def forward(self, x):
        x = x.flatten(1)
        return self.head(self.drop(self.a(x)) + self.drop(self.b(x)))


class RandomOpsInAnotherOrder(unittest.TestCase):
    """No baseline order swaps independent dropouts, so this plan is made here: the order
    delays every op as long as the dependencies allow (which runs the second dropout first),
    and every storage gets bytes of its own (no reuse, so no validation is needed)."""

    def test_reseeding_before_each_random_op_keeps_the_masks_of_eager(self):
        runner = planned.Runner(s.cnn_spec("adam"), TwoDropouts)
        graph = runner.graph
        order = s.latest_first_order(graph)
        self.assertTrue(arena.random_order_changed(runner.export, order))
        buffers, offset = [], 0
        for tid, size in sorted(plan_io.planned_roots(graph).items()):
            buffers.append({"tensor": tid, "offset": offset, "size": size, "start": 0,
                            "end": 0})
            offset += -(-size // 512) * 512
        plan = {"format": "roam-plan-v1", "graph": graph["name"], "alignment": 512,
                "order": order, "buffers": buffers, "summary": {}}
        d = s.temp_dir(self)
        graph_path = s.write_json(d, "graph.json", graph)
        plan_path = s.write_json(d, "plan.json", plan)

        def run():
            return runner.run(graph, graph_path, plan, plan_path, steps=STEPS,
                              skip_validate=True)

        r = run()
        self.assertTrue(r.random_reseeded)
        self.assertIsNone(r.difference)
        # Without the reseeding the masks trade places and the numbers differ: the test
        # above can fail.
        original = planned.ar.random_order_changed
        planned.ar.random_order_changed = lambda export, order: False
        try:
            r = run()
        finally:
            planned.ar.random_order_changed = original
        self.assertFalse(r.random_reseeded)
        self.assertIsNotNone(r.difference)
        self.assertIn("not the arena's", r.diagnosis)


# ---------------------------------------------------------------------------------------------
# The command line

_module = None


def run_plan_main(args):
    """run_plan.py's main() in this process; returns (exit status, stdout, stderr)."""
    global _module
    if _module is None:
        spec = importlib.util.spec_from_file_location("roam_run_plan_cli", RUN_PLAN_PY)
        _module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_module)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = _module.main(list(args))
        except SystemExit as e:  # argparse
            code = e.code
    return code, out.getvalue(), err.getvalue()


class CommandLine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="roam-run-plan-cli-")
        d = cls.tmp.name
        cls.config, cls.graph = export_tiny_gpt(d)
        cls.plan = make_plan(d, cls.graph, ["evaluate", "--order", "lescea", "--layout",
                                            "best-fit"], "plan.json")
        cls.graph3 = os.path.join(d, "graph-b3.json")
        r = s.run_export_main(["--config", cls.config, "--batch", "3", "--name", "tiny-gpt",
                               "-o", cls.graph3])
        assert r.returncode == 0, r.stderr
        cls.plan3 = make_plan(d, cls.graph3, ["evaluate"], "plan-b3.json")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def args(self, *extra, plan=None, graph=None):
        return ["--config", self.config, "--graph", graph or self.graph, "--plan",
                plan or self.plan, "--roam", s.roam_binary(), *extra]

    def test_command_line_runs_the_plan_and_reports_the_arena_and_the_match(self):
        r = subprocess.run([sys.executable, RUN_PLAN_PY, *self.args("--check-eager")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = load(self.plan)
        self.assertIn(f"arena: {plan['summary']['actual_peak']:,} bytes", r.stdout)
        self.assertIn("transient bytes per step", r.stdout)
        self.assertIn("matches eager PyTorch (bit-identical)", r.stdout)

    def test_json_report(self):
        code, out, err = run_plan_main(self.args("--check-eager", "--json", "--steps", "3"))
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertTrue(doc["matches_eager"])
        self.assertEqual(len(doc["eager_losses"]), 3)
        self.assertEqual(doc["planned_losses"], doc["eager_losses"])
        self.assertEqual(doc["plan"], load(self.plan)["summary"])
        self.assertGreaterEqual(doc["arena_allocated"], doc["arena_bytes"])

    def test_overlapping_plan_runs_only_with_the_unsafe_flag_and_then_differs(self):
        bad, _, _ = overlapping_plan(load(self.graph), load(self.plan))
        bad_path = s.write_json(self.tmp.name, "overlap.json", bad)
        code, out, err = run_plan_main(self.args("--check-eager", plan=bad_path))
        self.assertEqual(code, 2, err)
        self.assertIn("fails `roam validate`", err)
        self.assertEqual(out, "")
        code, out, err = run_plan_main(self.args("--check-eager", "--unsafe-skip-validate",
                                                 plan=bad_path))
        self.assertEqual(code, 1, out + err)
        self.assertIn("differs from eager PyTorch", err)
        self.assertIn("first wrong value", err)

    def assertBadInput(self, args, message):
        code, out, err = run_plan_main(args)
        self.assertEqual(code, 2, out + err)
        self.assertIn(message, err)
        self.assertEqual(out, "", "nothing may run on bad input")

    def test_unknown_model(self):
        self.assertBadInput(["--model", "resnet19", "--graph", self.graph, "--plan", self.plan],
                            "unknown torchvision classification model 'resnet19'")

    def test_a_plan_for_another_graph(self):
        other = load(self.plan)
        other["graph"] = "resnet18-b32"
        path = s.write_json(self.tmp.name, "other.json", other)
        self.assertBadInput(self.args(plan=path), "a plan for another graph")

    def test_a_graph_that_is_not_the_trace_of_the_model(self):
        # Same name, batch 3: the sizes differ from the trace of the config's batch 2.
        self.assertBadInput(self.args(graph=self.graph3, plan=self.plan3),
                            "is not the trace of tiny-gpt")

    def test_a_plan_of_the_other_batch_fails_validation(self):
        self.assertBadInput(self.args(plan=self.plan3), "fails `roam validate`")

    def test_missing_and_malformed_files(self):
        self.assertBadInput(self.args(plan=os.path.join(self.tmp.name, "nope.json")),
                            "cannot read")
        self.assertBadInput(self.args(plan=self.graph), "expected 'roam-plan-v1'")

    def test_an_order_that_is_not_topological_even_without_validation(self):
        plan = load(self.plan)
        plan["order"] = list(reversed(plan["order"]))
        path = s.write_json(self.tmp.name, "reversed.json", plan)
        self.assertBadInput(self.args("--unsafe-skip-validate", plan=path),
                            "field \"order\" runs op")

    def test_cuda_without_cuda(self):
        if s.torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        self.assertBadInput(self.args("--device", "cuda"), "CUDA is not available")

    def test_unknown_device(self):
        self.assertBadInput(self.args("--device", "tpu"), "--device tpu: must be cpu or cuda")
        self.assertBadInput(self.args("--device", "mps"), "--device mps: must be cpu or cuda")

    def test_non_positive_steps(self):
        self.assertBadInput(self.args("--steps", "0"), "--steps: must be a positive integer")


if __name__ == "__main__":
    unittest.main()
