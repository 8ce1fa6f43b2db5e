"""One test (or more) per known pitfall of tracing PyTorch 1.13 (docs/torch-export.md)."""

import collections
import operator
import subprocess
import sys
import textwrap
import unittest

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

import support as s
from roam_torch import patches

aten = torch.ops.aten


def ops_named(graph, name):
    return [op["id"] for op in graph["ops"] if op["name"] == name]


def outputs_of(graph, op):
    return [t for t in graph["tensors"] if t["producer"] == op]


def inputs_of(graph, op):
    return [t for t in graph["tensors"] if op in t["consumers"]]


class StorageIdentity(unittest.TestCase):
    """aten._unsafe_view shares storage without declaring an alias; native_batch_norm writes
    the running statistics without declaring it."""

    def test_unsafe_view_schema_declares_no_alias(self):
        # The premise: a schema-based exporter would give _unsafe_view fresh bytes.
        self.assertIsNone(aten._unsafe_view.default._schema.returns[0].alias_info)

    def test_unsafe_view_output_is_an_alias_of_its_input(self):
        _, graph, _, _ = s.trace(s.gpt_spec())
        views = ops_named(graph, "aten._unsafe_view")
        self.assertGreater(len(views), 0)
        for op in views:
            (out,) = outputs_of(graph, op)
            ins = [t["id"] for t in inputs_of(graph, op) if t["kind"] != "control"]
            self.assertIn(out["alias_of"], ins, f"_unsafe_view op {op}")

    def test_native_batch_norm_writes_running_stats_its_schema_does_not_declare(self):
        schema = aten.native_batch_norm.default._schema
        for i in (3, 4):
            self.assertFalse(schema.arguments[i].alias_info and
                             schema.arguments[i].alias_info.is_write)
        x = torch.randn(4, 3, 5, 5)
        mean, var = torch.zeros(3), torch.ones(3)
        aten.native_batch_norm.default(x, None, None, mean, var, True, 0.1, 1e-5)
        self.assertFalse(torch.equal(mean, torch.zeros(3)))
        self.assertFalse(torch.equal(var, torch.ones(3)))
        written = patches.written_arguments(aten.native_batch_norm.default,
                                            (x, None, None, mean, var, True, 0.1, 1e-5), {})
        self.assertEqual([id(t) for t in written], [id(mean), id(var)])
        # Inference does not write them.
        self.assertEqual(patches.written_arguments(
            aten.native_batch_norm.default, (x, None, None, mean, var, False, 0.1, 1e-5), {}), [])

    def test_batch_norm_op_outputs_the_updated_running_stats_as_aliases(self):
        traced, graph, _, _ = s.trace(s.cnn_spec(), lambda: s.SmallCNN())
        # Placeholders become the first tensors, in order.
        names = dict(enumerate(traced.names))
        for i in names:
            self.assertIsNone(graph["tensors"][i]["producer"])
        bns = ops_named(graph, "aten.native_batch_norm")
        self.assertEqual(len(bns), 3)
        for op in bns:
            aliased = sorted(names.get(t["alias_of"], "") for t in outputs_of(graph, op)
                             if t["alias_of"] is not None)
            self.assertEqual([a.rsplit(".", 1)[1] for a in aliased],
                             ["running_mean", "running_var"], f"op {op}")

    def test_every_write_in_a_real_step_is_known_to_the_exporter(self):
        """Runs traced steps node by node on real tensors and checks that every argument
        whose value changed is one written_arguments() reports (or shares its storage)."""
        cases = [(s.cnn_spec("adam"), lambda: s.SmallCNN(act=nn.SiLU())),
                 (s.cnn_spec("sgd", momentum=0.9), lambda: s.SmallCNN()),
                 (s.gpt_spec(dropout=0.2), None)]
        for spec, model_fn in cases:
            traced, _, _, _ = s.trace(spec, model_fn)
            inputs = s.step_inputs(spec, model_fn)
            env = {}
            placeholders = [n for n in traced.gm.graph.nodes if n.op == "placeholder"]
            env.update(zip(placeholders, [t.detach().clone() for t in inputs.tensors]))
            checked = 0
            for n in traced.gm.graph.nodes:
                if n.op == "get_attr":
                    env[n] = getattr(traced.gm, n.target)
                if n.op != "call_function":
                    continue
                args = torch.fx.node.map_arg(n.args, env.__getitem__)
                kwargs = torch.fx.node.map_arg(n.kwargs, env.__getitem__)
                if n.target is operator.getitem:
                    env[n] = args[0][args[1]]
                    continue
                flat = [a for a in torch.utils._pytree.tree_flatten((args, kwargs))[0]
                        if isinstance(a, torch.Tensor)]
                before = [a.clone() for a in flat]
                env[n] = n.target(*args, **kwargs)
                written = patches.written_arguments(n.target, args, kwargs)
                keys = {w.storage().data_ptr() for w in written}
                for a, b in zip(flat, before):
                    if not torch.equal(a, b) and not (a.isnan().any() and b.isnan().any()):
                        checked += 1
                        self.assertIn(a.storage().data_ptr(), keys,
                                      f"{n.target} changed an argument it does not declare")
            self.assertGreater(checked, 0)


class InPlaceOrdering(unittest.TestCase):
    """In-place ops become ordering: every read of the old value runs before the write, and
    the result is an alias of the mutated tensor."""

    def reachable(self, graph):
        succ = s.dependencies(graph)
        memo = {}

        def reach(a):
            if a not in memo:
                out = set()
                for b in succ[a]:
                    out.add(b)
                    out |= reach(b)
                memo[a] = out
            return memo[a]

        import sys as _sys
        _sys.setrecursionlimit(100000)
        return reach

    def check_reads_before_writes(self, graph):
        tensors = {t["id"]: t for t in graph["tensors"]}

        def root(tid):
            while tensors[tid]["alias_of"] is not None:
                tid = tensors[tid]["alias_of"]
            return tid

        pos = {op: i for i, op in enumerate(graph["program_order"])}
        reach = self.reachable(graph)
        members = collections.defaultdict(list)
        for t in graph["tensors"]:
            if t["kind"] != "control":
                members[root(t["id"])].append(t)
        checked = 0
        for op in graph["ops"]:
            if not (op["name"].endswith("_") and not op["name"].startswith("aten._")):
                continue
            w = op["id"]
            for out in outputs_of(graph, w):
                if out["alias_of"] is None:
                    continue
                self.assertIn(w, tensors[out["alias_of"]]["consumers"],
                              f"{op['name']} result aliases a tensor it did not read")
                # Every earlier reader of the storage must be ordered before the write.
                for member in members[root(out["id"])]:
                    for c in member["consumers"]:
                        if c != w and pos[c] < pos[w]:
                            self.assertIn(w, reach(c), f"op {c} reads the storage "
                                          f"{op['name']} (op {w}) writes, but may run after it")
                            checked += 1
        self.assertGreater(checked, 0)

    def test_relu_and_residual_add_and_optimizer_updates_in_cnn(self):
        _, graph, _, _ = s.trace(s.cnn_spec(), lambda: s.SmallCNN())
        names = collections.Counter(op["name"] for op in graph["ops"])
        self.assertGreater(names["aten.relu_"], 0)
        self.assertGreater(names["aten.addcdiv_"], 0)
        self.check_reads_before_writes(graph)
        for op in ops_named(graph, "aten.relu_"):
            (out,) = outputs_of(graph, op)
            self.assertEqual(out["kind"], "activation")
            self.assertIn(op, next(t for t in graph["tensors"]
                                   if t["id"] == out["alias_of"])["consumers"])

    def test_optimizer_updates_in_gpt(self):
        _, graph, _, _ = s.trace(s.gpt_spec())
        self.check_reads_before_writes(graph)

    def test_ordering_tensors_have_size_zero(self):
        _, graph, report, _ = s.trace(s.gpt_spec())
        control = [t for t in graph["tensors"] if t["kind"] == "control"]
        self.assertEqual(len(control), report.control_tensors)
        self.assertGreater(len(control), 0)
        for t in control:
            self.assertEqual(t["size"], 0)
            self.assertIsNotNone(t["producer"])
            self.assertTrue(t["consumers"])


class EagerGranularity(unittest.TestCase):
    """make_fx decomposes CompositeImplicitAutograd ops that eager runs as one kernel."""

    def silu_model(self):
        return s.SmallCNN(act=nn.SiLU())

    def test_silu_backward_stays_one_op(self):
        traced, graph, _, _ = s.trace(s.cnn_spec(), self.silu_model)
        names = [op["name"] for op in graph["ops"]]
        self.assertEqual(names.count("aten.silu_backward"), 1)
        if s.ON_1_13:  # 2.x's make_fx no longer decomposes it: nothing to keep
            self.assertIn("aten.silu_backward.default", traced.kept_whole)
        backward = [op["name"] for op in graph["ops"] if op["phase"] == "backward"]
        self.assertNotIn("aten.sigmoid", backward)

    @unittest.skipUnless(s.ON_1_13, "PyTorch 2's make_fx keeps silu_backward whole by itself")
    def test_plain_make_fx_would_split_it(self):
        _, graph, _, _ = s.trace(s.cnn_spec(), self.silu_model, eager_granularity=False)
        names = [op["name"] for op in graph["ops"]]
        self.assertNotIn("aten.silu_backward", names)
        self.assertIn("aten.sigmoid", names)

    def test_op_sequence_matches_eager_dispatch(self):
        """Program order = the order eager PyTorch dispatches the device ops, one op each."""
        for spec, model_fn in [(s.cnn_spec(), self.silu_model),
                               (s.gpt_spec(dropout=0.1), None)]:
            _, graph, report, _ = s.trace(spec, model_fn)
            inputs = s.step_inputs(spec, model_fn)
            log = DeviceDispatchLog()
            with log:
                s.eager_step(spec, inputs)
            traced_names = [graph["ops"][op]["name"] for op in graph["program_order"]]
            self.assertEqual(traced_names, log.ops, spec.name)
            n_params = len(list(inputs.model.parameters()))
            self.assertEqual(log.step_increments, n_params)
            self.assertEqual(report.host_ops.get("aten.add_"), n_params)


class DeviceDispatchLog(TorchDispatchMode):
    """The ops an eager step dispatches, without host-side work: Adam's step counters
    (torch.tensor -> lift_fresh, add_ on the 0-dim float counter, .item()), the profiler's
    record_function (zeros(1), _record_function_enter), and aten.detach, which only shows up
    because an active Python mode routes autograd's internal shallow copies through the
    dispatcher (the autograd profiler records no aten::detach in a plain eager step)."""

    HOST = {"aten.lift_fresh", "aten._local_scalar_dense", "profiler._record_function_enter",
            "profiler._record_function_enter_new", "profiler._record_function_exit",
            "aten.zeros", "aten.detach"}

    def __init__(self):
        super().__init__()
        self.ops = []
        self.step_increments = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name == "aten.add_" and args[0].dim() == 0 and args[0].dtype == torch.float32:
            self.step_increments += 1
        elif name not in self.HOST:
            self.ops.append(name)
        return func(*args, **(kwargs or {}))


class DetachArtifacts(unittest.TestCase):
    """aten.detach nodes in a fake trace come from autograd shallow-copying Python-subclass
    tensors; a plain eager step with autograd.grad dispatches none."""

    def test_plain_eager_step_dispatches_no_detach(self):
        from torch.profiler import ProfilerActivity, profile

        for spec, model_fn in [(s.cnn_spec(), lambda: s.SmallCNN()),
                               (s.gpt_spec(dropout=0.1), None)]:
            inputs = s.step_inputs(spec, model_fn)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                s.eager_step(spec, inputs)
            names = collections.Counter(e.name for e in prof.events())
            self.assertEqual(names["aten::detach"], 0, spec.name)
            self.assertGreater(names["aten::addcdiv_"], 0)  # the profiler saw the step
        # The profiler does record detach when it is dispatched.
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            torch.ones(2).detach()
        self.assertIn("aten::detach", [e.name for e in prof.events()])

    def test_fake_trace_drops_them_but_keeps_explicit_detach(self):
        traced, graph, report, _ = s.trace(s.cnn_spec(), lambda: s.SmallCNN())
        fx_detach = [n for n in traced.gm.graph.nodes if n.target is aten.detach.default]
        self.assertEqual(report.dropped_detach, len(fx_detach))
        self.assertGreater(report.dropped_detach, 0)
        self.assertNotIn("aten.detach", [op["name"] for op in graph["ops"]])

        class Explicit(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 5)

            def forward(self, x):
                x = x.mean((2, 3))
                return self.lin(x) + self.lin(x).detach()

        _, graph, _, _ = s.trace(s.cnn_spec(), Explicit)
        self.assertEqual([op["name"] for op in graph["ops"]].count("aten.detach"), 1)


def contiguous_and_channels_last(*shape):
    x = torch.randn(shape)
    return x, x.contiguous(memory_format=torch.channels_last)


class MissingMetaKernels(unittest.TestCase):
    """1.13 has no meta kernel for convolution_backward (nor _adaptive_avg_pool2d_backward,
    max_unpool2d, nll_loss2d_forward)."""

    @unittest.skipUnless(s.ON_1_13, "PyTorch 2 ships these meta kernels")
    def test_without_the_registration_fake_tracing_cannot_run_them(self):
        code = textwrap.dedent("""
            import torch
            from torch._subclasses.fake_tensor import FakeTensorMode
            for name in NAMES:
                assert not torch._C._dispatch_has_kernel_for_dispatch_key(
                    "aten::" + name, "Meta"), name
            with FakeTensorMode(allow_fallback_kernels=False):
                x = torch.empty(2, 3, 8, 8); w = torch.empty(4, 3, 3, 3)
                g = torch.empty(2, 4, 6, 6)
                try:
                    torch.ops.aten.convolution_backward(g, x, w, [4], [1, 1], [0, 0], [1, 1],
                                                        False, [0, 0], 1, [True, True, True])
                except NotImplementedError:
                    print("no meta kernel")
        """).replace("NAMES", repr(sorted(patches.MISSING_META_KERNELS)))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no meta kernel", r.stdout)

    @unittest.skipUnless(s.ON_1_13, "PyTorch 2 ships its own meta kernel (roam's is not "
                         "registered there)")
    def test_meta_kernel_matches_real_kernel(self):
        patches.register_missing_meta_kernels()
        configs = [
            # (N, Cin, H, W), (Cout, Cin/groups, kh, kw), stride, padding, dilation, groups,
            # transposed, bias, mask
            ((2, 4, 9, 9), (6, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1, False, True,
             [True, True, True]),
            ((2, 4, 9, 9), (8, 2, 3, 3), [2, 2], [0, 0], [1, 1], 2, False, False,
             [True, True, False]),
            ((1, 3, 10, 7), (3, 1, 3, 3), [1, 2], [2, 1], [2, 1], 3, False, True,
             [False, True, True]),
            ((2, 4, 5, 5), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], 1, True, True,
             [True, False, True]),
        ]
        for xs, ws, stride, pad, dil, groups, transposed, bias, mask in configs:
            x = torch.randn(xs)
            w = torch.randn(ws)
            b = torch.randn(ws[1] * groups if transposed else ws[0]) if bias else None
            out_pad = [0, 0]
            y = torch.ops.aten.convolution(x, w, b, stride, pad, dil, transposed, out_pad,
                                           groups)
            g = torch.randn_like(y)
            bias_sizes = [b.shape[0]] if bias else None
            args = (stride, pad, dil, transposed, out_pad, groups, mask)
            real = aten.convolution_backward.default(g, x, w, bias_sizes, *args)
            meta = aten.convolution_backward.default(g.to("meta"), x.to("meta"), w.to("meta"),
                                                     bias_sizes, *args)
            for r_, m in zip(real, meta):
                if r_ is None:
                    self.assertIsNone(m)
                else:
                    self.assertEqual(m.device.type, "meta")
                    self.assert_same_geometry(m, r_)

    def assert_same_geometry(self, meta, real, msg=None):
        self.assertEqual((meta.shape, meta.dtype, meta.stride()),
                         (real.shape, real.dtype, real.stride()), msg)

    def test_adaptive_avg_pool2d_backward_meta_matches_real_kernel(self):
        patches.register_missing_meta_kernels()
        for x in contiguous_and_channels_last(2, 3, 7, 9):
            y = torch.ops.aten._adaptive_avg_pool2d(x, [3, 2])
            g = torch.randn_like(y)
            real = aten._adaptive_avg_pool2d_backward.default(g, x)
            meta = aten._adaptive_avg_pool2d_backward.default(g.to("meta"), x.to("meta"))
            self.assert_same_geometry(meta, real)

    def test_max_unpool2d_and_nll_loss2d_meta_match_real_kernels(self):
        # SegNet's unpooling and the per-pixel loss (roam_torch/segmentation.py).
        patches.register_missing_meta_kernels()
        for x in contiguous_and_channels_last(2, 3, 9, 11):
            pooled, indices = torch.nn.functional.max_pool2d(x, 2, 2, return_indices=True)
            real = aten.max_unpool2d.default(pooled, indices, [9, 11])
            meta = aten.max_unpool2d.default(pooled.to("meta"), indices.to("meta"), [9, 11])
            self.assert_same_geometry(meta, real, x.stride())
        log_probs = torch.randn(2, 4, 5, 6).log_softmax(1)
        target = torch.randint(0, 4, (2, 5, 6))
        for reduction in (0, 1, 2):  # none, mean, sum
            real = aten.nll_loss2d_forward.default(log_probs, target, None, reduction, -100)
            meta = aten.nll_loss2d_forward.default(log_probs.to("meta"), target.to("meta"),
                                                   None, reduction, -100)
            for r_, m in zip(real, meta):
                self.assert_same_geometry(m, r_, reduction)

    def test_fake_trace_of_a_cnn_runs_no_real_kernel(self):
        # allow_fallback_kernels=False: any op without a meta kernel raises instead of running
        # for real on zeros. Tracing resnet18 at batch 2 therefore proves no real conv ran.
        from roam_torch import trace as tr
        from roam_torch.spec import torchvision_spec

        traced = tr.trace_step(torchvision_spec("resnet18", batch=2))
        names = [n.target for n in traced.gm.graph.nodes if n.op == "call_function"]
        self.assertEqual(names.count(aten.convolution_backward.default), 20)


class CudaFormDropout(unittest.TestCase):
    """On CPU, dropout traces as bernoulli_ with a float32 mask; CUDA runs native_dropout with
    a bool mask. The CUDA form is the default."""

    def test_default_emits_native_dropout_with_bool_mask(self):
        spec = s.gpt_spec(dropout=0.1, n_layer=2)
        _, graph, _, _ = s.trace(spec)
        names = [op["name"] for op in graph["ops"]]
        self.assertEqual(names.count("aten.native_dropout"), 1 + 3 * 2)
        self.assertEqual(names.count("aten.native_dropout_backward"), 1 + 3 * 2)
        self.assertNotIn("aten.bernoulli_", names)
        for op in ops_named(graph, "aten.native_dropout"):
            out, mask = outputs_of(graph, op)
            (src,) = [t for t in inputs_of(graph, op) if t["kind"] != "control"]
            self.assertEqual(out["size"], src["size"])
            self.assertEqual(mask["size"] * 4, src["size"])  # bool mask of a float32 input

    def test_cpu_form_on_request(self):
        spec = s.gpt_spec(dropout=0.1, n_layer=1, dropout_form="cpu")
        _, graph, _, _ = s.trace(spec)
        names = [op["name"] for op in graph["ops"]]
        self.assertNotIn("aten.native_dropout", names)
        self.assertEqual(names.count("aten.bernoulli_"), 1 + 3 * 1)


class InputKindsAndHostCounters(unittest.TestCase):
    """Graph inputs carry their kind; Adam's step counters stay on the host."""

    def test_input_kinds(self):
        spec = s.gpt_spec()
        _, graph, report, _ = s.trace(spec)
        inputs = [t for t in graph["tensors"] if t["producer"] is None]
        kinds = collections.Counter(t["kind"] for t in inputs)
        model = s.step_inputs(spec).model
        params = list(model.parameters())
        self.assertEqual(kinds["weight"], len(params))  # the tied embedding counts once
        self.assertEqual(kinds["optimizer_state"], 2 * len(params))
        self.assertEqual(kinds["input"], 2 + len(list(model.buffers())))  # data + masks
        self.assertEqual(len(inputs), sum(kinds.values()))
        self.assertEqual(sum(t["size"] for t in inputs if t["kind"] == "weight") // 4,
                         sum(p.numel() for p in params))
        self.assertEqual(report.weight_elements, sum(p.numel() for p in params))

    def test_adam_step_counters_are_host_ops(self):
        spec = s.gpt_spec()
        _, graph, report, _ = s.trace(spec)
        n = len(list(s.step_inputs(spec).model.parameters()))
        self.assertEqual(report.host_ops["aten.lift_fresh_copy"], n)
        self.assertEqual(report.host_ops["aten.add_"], n)
        self.assertEqual(report.host_inputs, 0)
        # The device update per parameter: exactly the tensor ops of foreach=False Adam (2.x
        # updates exp_avg with one lerp_).
        opt = [op["name"] for op in graph["ops"] if op["phase"] == "optimizer"]
        first = ["aten.mul_", "aten.add_"] if s.ON_1_13 else ["aten.lerp_"]
        per_param = first + ["aten.mul_", "aten.addcmul_", "aten.sqrt", "aten.div",
                             "aten.add_", "aten.addcdiv_"]
        self.assertEqual(opt, per_param * n)
        # No 0-dim tensor (a step counter) is a graph input.
        self.assertFalse([t for t in graph["tensors"] if t["producer"] is None and
                          t["size"] == 4])


if __name__ == "__main__":
    unittest.main()
