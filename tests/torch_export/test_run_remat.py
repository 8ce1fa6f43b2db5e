"""run_plan.py on graphs `roam remat` rewrote: the copies (recomputations) run in the plan's
order into their own planned places, their consumers read them as the graph wires them, and a
tiny GPT (whose dropout is recomputed, with its RNG state restored), a small CNN and SegNet
match eager PyTorch bit for bit over 2 steps; wrong rewirings are rejected (exit 2) or, run
anyway, give other numbers (exit 1)."""

import copy
import os
import tempfile
import unittest

import support as s
from roam_torch import arena, patches, plan_io, planned
from roam_torch.gpt2 import GPT2Config
from roam_torch.spec import OptimizerSpec, StepSpec, load_config
from test_run_plan import export_tiny_gpt, load, run_plan_main

STEPS = 2
RATIO = "0.7"  # of the no-remat peak: low enough that every model here recomputes something


def remat(directory, graph_path, name, *extra, ratio=RATIO):
    """`roam remat GRAPH --budget-ratio 0.7 --rng-state-kept`: (rewritten graph, plan) paths."""
    rw = os.path.join(directory, f"{name}.rw.json")
    plan = os.path.join(directory, f"{name}.plan.json")
    r = s.run_roam(["remat", graph_path, "--budget-ratio", ratio, "--rng-state-kept",
                    "--alignment", "64", "-o", plan, "--graph-out", rw, *extra])
    if r.returncode != 0:
        raise AssertionError(f"roam remat: {r.stdout}{r.stderr}")
    return rw, plan


def gpt_spec(dropout_form="cuda"):
    """Positions as long as the sequence, so activations (not the position table's gradient)
    make the peak and remat has something to do."""
    return StepSpec(name="tiny-gpt", family="gpt2",
                    gpt2=GPT2Config(n_layer=2, n_embd=8, n_head=2, seq_len=5, vocab=13,
                                    n_positions=5, dropout=0.25),
                    batch=2, optimizer=OptimizerSpec(name="adam", lr=0.01),
                    dropout_form=dropout_form)


def copies(graph):
    return {op["id"]: op["recomputes"] for op in graph["ops"] if "recomputes" in op}


class RematPlansRunAndMatchEager:
    """Mixed into one TestCase per model."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="roam-run-remat-")
        d = cls.tmp.name
        cls.runner = cls.make_runner()
        cls.graph_path = s.write_json(d, "graph.json", cls.runner.graph)
        cls.rw_path, cls.plan_path = remat(d, cls.graph_path, "remat")
        cls.rw = load(cls.rw_path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_plan(self, plan_path, graph=None, graph_path=None, **kwargs):
        return self.runner.run(graph or self.rw, graph_path or self.rw_path, load(plan_path),
                               plan_path, steps=STEPS, roam=s.roam_binary(), **kwargs)

    def test_the_remat_plan_runs_every_recomputation_in_the_arena_and_matches_eager(self):
        made = copies(self.rw)
        self.assertGreater(len(made), 0, "the budget must make roam remat recompute")
        r = self.run_plan(self.plan_path)
        self.assertIsNone(r.difference, r.diagnosis)
        self.assertEqual(r.tolerance, (0.0, 0.0))
        plan = load(self.plan_path)
        self.assertEqual(r.arena_bytes, plan["summary"]["actual_peak"])
        st = r.stats
        self.assertEqual(st.ops_recomputed, len(made))
        self.assertEqual(st.ops_out + st.ops_copied + st.ops_empty + st.ops_other,
                         len(self.rw["ops"]))
        # The arena is below what the same model needs without recomputation.
        no_remat = plan_io.load_json(make_plan(self.tmp.name, self.graph_path), "PLAN",
                                     "roam-plan-v1")
        self.assertLess(r.arena_bytes, no_remat["summary"]["actual_peak"])

    def test_another_order_of_the_rewritten_graph_runs_and_matches_eager(self):
        plan_path = make_plan(self.tmp.name, self.rw_path, "--order", "lescea", "--layout",
                              "best-fit")
        self.assertNotEqual(load(plan_path)["order"], self.rw["program_order"])
        r = self.run_plan(plan_path)
        self.assertIsNone(r.difference, r.diagnosis)

    def test_a_consumer_rewired_to_another_value_is_rejected_even_unvalidated(self):
        bad = copy.deepcopy(self.rw)
        tensors = {t["id"]: t for t in bad["tensors"]}
        made = copies(bad)
        c = next(t for t in bad["tensors"] if t["producer"] in made and t["consumers"] and
                 t["size"] > 0)
        reader = c["consumers"][0]
        reads = {t["id"] for t in bad["tensors"] if reader in t["consumers"]}
        other = next(t for t in bad["tensors"] if t["size"] == c["size"] and
                     t["id"] not in reads and t["producer"] is not None and
                     t["producer"] not in made and t["kind"] != "control" and
                     t["id"] != c["id"])
        c["consumers"].remove(reader)
        tensors[other["id"]]["consumers"].append(reader)
        d = s.temp_dir(self)
        bad_path = s.write_json(d, "bad.json", bad)
        with self.assertRaises(plan_io.BadInput) as e:
            self.run_plan(self.plan_path, bad, bad_path, skip_validate=True)
        self.assertIn(f"op {reader} reads tensor {other['id']}", str(e.exception))
        self.assertIn("is not a remat rewrite of the trace", str(e.exception))


def make_plan(directory, graph_path, *options):
    plan = os.path.join(directory, f"plan{len(os.listdir(directory))}.json")
    r = s.run_roam(["evaluate", graph_path, "--alignment", "64", *options, "-o", plan])
    if r.returncode != 0:
        raise AssertionError(f"roam evaluate: {r.stdout}{r.stderr}")
    return plan


class TinyGPT(RematPlansRunAndMatchEager, unittest.TestCase):
    """Tied embeddings, CUDA-form dropout (native_dropout, recomputed), Adam."""

    @staticmethod
    def make_runner():
        return planned.Runner(gpt_spec())

    def test_a_recomputed_dropout_draws_its_original_s_mask(self):
        made = copies(self.rw)
        names = {op["id"]: op["name"] for op in self.rw["ops"]}
        self.assertIn("aten.native_dropout", {names[c] for c in made})
        # Without restoring the generator state the copy draws another mask: the backward
        # then disagrees with the forward, and the run with eager.
        original = arena._set_rng_state
        arena._set_rng_state = lambda device, state: None
        try:
            r = self.run_plan(self.plan_path)
        finally:
            arena._set_rng_state = original
        self.assertIsNotNone(r.difference)
        r = self.run_plan(self.plan_path)
        self.assertIsNone(r.difference, r.diagnosis)


class CpuFormDropout(unittest.TestCase):
    """CPU dropout allocates its mask (empty_like) and draws it in place (bernoulli_): at half
    the no-remat peak roam recomputes both, and the copy of bernoulli_ draws its original's
    mask into the copy of the mask's storage."""

    def test_a_recomputed_in_place_draw_writes_the_original_s_mask_into_the_copy(self):
        runner = planned.Runner(gpt_spec(dropout_form="cpu"))
        d = s.temp_dir(self)
        graph_path = s.write_json(d, "graph.json", runner.graph)
        rw_path, plan_path = remat(d, graph_path, "remat", ratio="0.5")
        rw = load(rw_path)
        names = {op["id"]: op["name"] for op in rw["ops"]}
        recomputed = {names[c] for c in copies(rw)}
        self.assertLessEqual({"aten.empty_like", "aten.bernoulli_"}, recomputed)
        r = runner.run(rw, rw_path, load(plan_path), plan_path, steps=STEPS,
                       roam=s.roam_binary())
        self.assertIsNone(r.difference, r.diagnosis)
        self.assertGreater(r.stats.ops_empty, 0)


class SmallCNN(RematPlansRunAndMatchEager, unittest.TestCase):
    """Convolutions (recomputed), batch norm, in-place ReLU, residual add_, max pool, dropout,
    SGD with momentum. Batch norm updates its running statistics, so roam never recomputes it
    (a copy would update them twice: this runner found that)."""

    @staticmethod
    def make_runner():
        return planned.Runner(s.cnn_spec("sgd", momentum=0.9),
                              lambda: s.SmallCNN(dropout=0.3))

    def test_a_recomputed_batch_norm_leaves_the_running_statistics_to_its_original(self):
        # 60%: below what recomputing convolutions alone reaches here.
        rw_path, plan_path = remat(self.tmp.name, self.graph_path, "bn", ratio="0.6")
        rw = load(rw_path)
        names = {op["id"]: op["name"] for op in rw["ops"]}
        made = [c for c in copies(rw) if names[c] == "aten.native_batch_norm"]
        self.assertGreater(len(made), 0, "the budget must make roam recompute a batch norm")
        # The copy has no outputs on the running statistics: it does not update them again.
        for c in made:
            self.assertTrue(all(t["alias_of"] is None for t in rw["tensors"]
                                if t["producer"] == c and t["kind"] != "control"))
        # Run with the update, the copies apply it twice and the statistics differ from eager.
        saved = dict(patches.STATE_UPDATE_SKIPPED)
        patches.STATE_UPDATE_SKIPPED.clear()
        try:
            r = self.run_plan(plan_path, rw, rw_path)
        finally:
            patches.STATE_UPDATE_SKIPPED.update(saved)
        self.assertIsNotNone(r.difference)
        r = self.run_plan(plan_path, rw, rw_path)
        self.assertIsNone(r.difference, r.diagnosis)


class SegNet(RematPlansRunAndMatchEager, unittest.TestCase):
    """configs/segnet.yaml's model (roam_torch/segmentation.py) at 45x45, where its pools floor:
    max-pool indices kept until the decoder unpools with them, batch norm, a per-pixel loss,
    Adam."""

    @staticmethod
    def make_runner():
        return planned.Runner(StepSpec(name="segnet", family="segmentation", model="segnet",
                                       batch=2, image_size=45, num_classes=4,
                                       optimizer=OptimizerSpec(name="adam", lr=0.01)))


@unittest.skipUnless(s.ON_1_13, "configs/llama-tiny.yaml's unfused attention is traced on 1.13")
class LlamaTiny(RematPlansRunAndMatchEager, unittest.TestCase):
    """configs/llama-tiny.yaml (bf16-mixed, AdamW): its weights' bf16 casts are read again in
    the backward through `aten.t`, so a recomputed cast's original view there aliases the copy
    it reads, and the original storage is free before it (docs/remat.md)."""

    @staticmethod
    def make_runner():
        return planned.Runner(load_config(os.path.join(s.SOURCE_DIR, "configs", "llama-tiny.yaml")))

    def test_a_backward_view_of_a_recomputed_cast_aliases_the_copy(self):
        made = copies(self.rw)
        tensors = {t["id"]: t for t in self.rw["tensors"]}
        of_copies = {t["id"] for t in self.rw["tensors"] if t.get("producer") in made}
        viewed = [t for t in self.rw["tensors"] if t.get("alias_of") in of_copies
                  and t.get("producer") is not None and t["producer"] not in made]
        self.assertTrue(viewed, "no original view of a copy: the test no longer tests it")
        for t in viewed:
            self.assertIn(t["producer"], tensors[t["alias_of"]]["consumers"])

    def test_an_original_view_not_of_the_computation_it_reads_is_rejected(self):
        made = copies(self.rw)
        of_copies = {t["id"] for t in self.rw["tensors"] if t.get("producer") in made}
        t = next(t for t in self.rw["tensors"] if t.get("alias_of") in of_copies
                 and t.get("producer") is not None and t["producer"] not in made)
        op, x = t["producer"], t["alias_of"]
        base = self.runner.graph["tensors"][t["id"]]["alias_of"]  # the trace's
        d = s.temp_dir(self)
        # Aliasing the original while reading the copy; reading the original while aliasing
        # the copy.
        for case, expected in (("stale", "another computation of it"),
                               ("unread", "of a copy, which op")):
            bad = copy.deepcopy(self.rw)
            tensors = {u["id"]: u for u in bad["tensors"]}
            if case == "stale":
                tensors[t["id"]]["alias_of"] = base
            else:
                tensors[x]["consumers"].remove(op)
                tensors[base]["consumers"].append(op)
            bad_path = s.write_json(d, f"{case}.json", bad)
            with self.assertRaises(plan_io.BadInput) as e:
                self.run_plan(self.plan_path, bad, bad_path, skip_validate=True)
            self.assertIn(expected, str(e.exception))

    def test_ids_that_are_not_integers_are_bad_input_even_unvalidated(self):
        made = copies(self.rw)
        t = next(t for t in self.rw["tensors"] if t.get("producer") in made)
        d = s.temp_dir(self)
        for key, value in (("alias_of", [1]), ("producer", {"a": 1}), ("id", 1.5),
                           ("alias_of", True), ("consumers", [[1]])):
            bad = copy.deepcopy(self.rw)
            next(u for u in bad["tensors"] if u["id"] == t["id"])[key] = value
            bad_path = s.write_json(d, "bad.json", bad)
            with self.assertRaises(plan_io.BadInput, msg=f"{key}={value!r}") as e:
                self.run_plan(self.plan_path, bad, bad_path, skip_validate=True)
            self.assertIn(f'field "{key}" is {value!r}', str(e.exception))


class CommandLine(unittest.TestCase):
    """The command line on a config's tiny GPT: a rewritten graph runs (exit 0); a consumer
    of a copy rewired back to the original tensor reads the same value, so the runner's own
    check passes it, but its plan no longer keeps that tensor alive: roam validate rejects it
    (exit 2), and run anyway it reads overwritten memory (exit 1)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="roam-run-remat-cli-")
        d = cls.tmp.name
        cls.config, cls.graph = export_tiny_gpt(d)
        cls.rw, cls.plan = remat(d, cls.graph, "remat")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def args(self, graph, *extra):
        return ["--config", self.config, "--graph", graph, "--plan", self.plan, "--roam",
                s.roam_binary(), "--check-eager", *extra]

    def test_a_rewritten_graph_runs_and_reports_its_recomputations(self):
        code, out, err = run_plan_main(self.args(self.rw))
        self.assertEqual(code, 0, out + err)
        n = len(copies(load(self.rw)))
        self.assertIn(f"{n} recomputations", out)
        self.assertIn("matches eager PyTorch (bit-identical)", out)

    def test_a_consumer_rewired_to_a_dead_original_is_rejected_and_run_anyway_differs(self):
        bad = rewired_to_dead_original(load(self.rw), load(self.plan))
        bad_path = s.write_json(self.tmp.name, "dead.json", bad)
        code, out, err = run_plan_main(self.args(bad_path))
        self.assertEqual(code, 2, out + err)
        self.assertIn("fails `roam validate --original`", err)
        self.assertEqual(out, "")
        code, out, err = run_plan_main(self.args(bad_path, "--unsafe-skip-validate"))
        self.assertEqual(code, 1, out + err)
        self.assertRegex(err, "differs from eager PyTorch|the planned run failed")


def rewired_to_dead_original(graph, plan):
    """graph with one reader of a copy's output C reading the original tensor T that C
    recomputes instead, where the plan puts another buffer on T's bytes after T's last use
    and before that reader runs, and C elsewhere (the largest such T: small tensors may hold
    indices)."""
    pos = {op: i for i, op in enumerate(plan["order"])}
    buffers = {b["tensor"]: b for b in plan["buffers"]}
    made = copies(graph)
    orig_outputs = {}
    for t in graph["tensors"]:
        if t["producer"] is not None and t["producer"] not in made and t["kind"] != "control":
            orig_outputs.setdefault(t["producer"], []).append(t["id"])
    fresh = {t["producer"] for t in graph["tensors"] if t["alias_of"] is None and t["size"] > 0}
    best = None
    for t in graph["tensors"]:
        c = t["producer"]
        if c not in made or t["alias_of"] is not None or t["id"] not in buffers:
            continue
        mine = [x["id"] for x in graph["tensors"] if x["producer"] == c and
                x["kind"] != "control"]
        orig = orig_outputs[made[c]][mine.index(t["id"])]
        if orig not in buffers:
            continue
        a = buffers[orig]
        if a["offset"] == buffers[t["id"]]["offset"]:
            continue  # the same bytes: the rewiring would change nothing
        for reader in t["consumers"]:
            if reader not in fresh:
                continue  # a view reads no values
            over = [b for b in plan["buffers"] if a["end"] < b["start"] < pos[reader] and
                    b["offset"] < a["offset"] + a["size"] and a["offset"] < b["offset"] + b["size"]]
            if over and (best is None or a["size"] > best[0]):
                best = (a["size"], t["id"], orig, reader)
    if best is None:
        raise AssertionError("no copy whose original's bytes are reused before its reader")
    _, c, orig, reader = best
    bad = copy.deepcopy(graph)
    ts = {t["id"]: t for t in bad["tensors"]}
    ts[c]["consumers"].remove(reader)
    ts[orig]["consumers"].append(reader)
    return bad


if __name__ == "__main__":
    unittest.main()
