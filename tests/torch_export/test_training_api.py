"""roam_torch.plan_training_step on a model none of the exporter's other tests use: a small
convolution + self-attention network with a custom (focal) loss, planned with roam and run
against a deep copy trained eagerly the usual way (zero_grad, backward, step)."""

import copy
import io
import os
import unittest
from unittest import mock

import support  # puts tools/torch_export on sys.path

import torch
import torch.nn as nn
import torch.nn.functional as F

import roam_torch
from roam_torch import compat


class ConvAttention(nn.Module):
    """conv-bn-relu stem, the feature map as tokens through multi-head self-attention with a
    residual and LayerNorm, dropout, mean pooling, linear head."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.ln = nn.LayerNorm(8)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        t = h.flatten(2).transpose(1, 2)
        a, _ = self.attn(t, t, t, need_weights=False)
        t = self.drop(self.ln(t + a))
        return self.head(t.mean(1))


def focal_loss(out, y):
    """A loss the exporter has no built-in form of: focal loss plus a logit penalty."""
    logp = F.log_softmax(out, -1)
    nll = -logp.gather(1, y[:, None]).squeeze(1)
    return ((1 - (-nll).exp()) ** 2 * nll).mean() + 0.01 * out.pow(2).mean()


def batch(gen):
    return torch.randn(4, 3, 6, 6, generator=gen), torch.randint(0, 5, (4,), generator=gen)


def same_state(test, a, b, what):
    """Bit-identical tensors in two (nested) state dicts."""
    if isinstance(a, dict):
        test.assertEqual(sorted(a, key=str), sorted(b, key=str), what)
        for k in a:
            same_state(test, a[k], b[k], f"{what}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        test.assertEqual(len(a), len(b), what)
        for i, (x, y) in enumerate(zip(a, b)):
            same_state(test, x, y, f"{what}[{i}]")
    elif isinstance(a, torch.Tensor):
        test.assertTrue(a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b),
                        f"{what} differs")
    else:
        test.assertEqual(a, b, what)


def with_roam():
    return mock.patch.dict(os.environ, {"ROAM_BINARY": support.roam_binary()})


class PlannedTrainingStep(unittest.TestCase):
    def run_against_eager(self, make_optimizer, steps=3, dropout=0.0, budget_ratio=None):
        torch.manual_seed(0)
        model = ConvAttention(dropout)
        eager_model = copy.deepcopy(model)
        opt, eager_opt = make_optimizer(model), make_optimizer(eager_model)
        gen = torch.Generator().manual_seed(1)
        x, y = batch(gen)
        with with_roam():
            planned = roam_torch.plan_training_step(model, opt, focal_loss, x, y,
                                                    budget_ratio=budget_ratio)
        for k in range(steps):
            x, y = batch(gen)  # a fresh batch every step
            torch.manual_seed(100 + k)
            loss = planned.step(x, y)
            torch.manual_seed(100 + k)
            eager_opt.zero_grad()
            eager_loss = focal_loss(eager_model(x), y)
            eager_loss.backward()
            eager_opt.step()
            self.assertTrue(torch.equal(loss, eager_loss.detach()),
                            f"step {k + 1}: loss {float(loss)!r} != {float(eager_loss)!r}")
            same_state(self, model.state_dict(), eager_model.state_dict(),
                       f"step {k + 1}: model")
            same_state(self, opt.state_dict(), eager_opt.state_dict(), f"step {k + 1}: opt")
        return planned, model, opt

    def test_adamw_three_steps_bit_identical_and_every_byte_counted(self):
        planned, model, opt = self.run_against_eager(
            lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1))
        mem = planned.memory()
        for key in ("arena_bytes", "planned_total_bytes", "measured_peak_bytes"):
            self.assertIsInstance(mem[key], int, key)
        self.assertEqual(mem["steps"], 3)
        self.assertEqual(mem["eager_steps"], 0)
        # Every byte of the step is counted, the arena and outside it; with each op's
        # scratch a planned temporary, the real peak is the plan's.
        self.assertEqual(mem["op_scratch_in_arena"], "yes")
        self.assertGreater(mem["op_scratch_ops"], 0)
        self.assertGreater(mem["transient_bytes_max"], 0)
        self.assertEqual(mem["measured_peak_bytes"],
                         mem["arena_allocated_bytes"] + mem["outside_arena_peak_bytes"])
        self.assertLessEqual(mem["measured_peak_bytes"], mem["planned_total_bytes"] * 1.01,
                             mem)
        # The user's objects stay ordinary: eval, state_dict round trip, saving.
        model.eval()
        with torch.no_grad():
            model(torch.randn(2, 3, 6, 6))
        buf = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
        buf.seek(0)
        saved = torch.load(buf)
        fresh = torch.optim.AdamW(ConvAttention().parameters(), lr=1e-2)
        fresh.load_state_dict(saved["opt"])
        self.assertEqual(float(opt.state_dict()["state"][0]["step"]), 3.0)

    def test_without_op_scratch_ops_allocate_outside_the_arena(self):
        torch.manual_seed(0)
        model = ConvAttention()
        opt = torch.optim.AdamW(model.parameters())
        x, y = batch(torch.Generator().manual_seed(1))
        with with_roam():
            planned = roam_torch.plan_training_step(model, opt, focal_loss, x, y,
                                                    op_scratch=False)
        planned.step(x, y)
        mem = planned.memory()
        self.assertEqual(mem["op_scratch_in_arena"], "no: op_scratch=False")
        # At least the largest result an op without an out= kernel made before it was
        # copied into place is outside the arena.
        self.assertGreaterEqual(mem["outside_arena_peak_bytes"], mem["transient_bytes_max"])
        self.assertGreater(mem["measured_peak_bytes"], mem["planned_total_bytes"] * 1.01)

    def test_sgd_momentum_first_step_eager_then_planned(self):
        planned, _, _ = self.run_against_eager(
            lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9))
        mem = planned.memory()
        self.assertEqual((mem["steps"], mem["eager_steps"]), (3, 1))

    def test_adam_with_dropout(self):
        self.run_against_eager(lambda m: torch.optim.Adam(m.parameters(), lr=1e-2),
                               steps=2, dropout=0.2)

    def test_remat_budget(self):
        planned, _, _ = self.run_against_eager(
            lambda m: torch.optim.Adam(m.parameters(), lr=1e-2), steps=2, budget_ratio=0.92)
        mem = planned.memory()
        self.assertGreater(mem["recomputed_ops"], 0)
        self.assertEqual(mem["op_scratch_in_arena"], "yes")
        self.assertLessEqual(mem["measured_peak_bytes"], mem["planned_total_bytes"] * 1.01,
                             mem)

    def test_bad_arguments_name_what_is_wrong(self):
        model = ConvAttention()
        opt = torch.optim.Adam(model.parameters())
        x, y = batch(torch.Generator().manual_seed(0))
        with with_roam():
            with self.assertRaisesRegex(roam_torch.UserStepError, "budget_ratio"):
                roam_torch.plan_training_step(model, opt, focal_loss, x, y, budget_ratio=1.5)
            with self.assertRaisesRegex(roam_torch.UserStepError, "loss_fn: must return a 0-dim"):
                roam_torch.plan_training_step(model, opt, lambda o, t: o, x, y)
            with self.assertRaisesRegex(roam_torch.TraceError, "in the forward pass"):
                # Data-dependent control flow cannot be traced over fake tensors.
                roam_torch.plan_training_step(
                    model, opt, lambda o, t: focal_loss(o, t) if o.sum() > 0 else o.sum(), x, y)
            planned = roam_torch.plan_training_step(model, opt, focal_loss, x, y)
        with self.assertRaisesRegex(roam_torch.UserStepError, r"inputs\[0\]: .*shape \(4, 3, 6, "
                                    r"6\).*got shape \(2, 3, 6, 6\)"):
            planned.step(x[:2], y)
        with mock.patch.dict(os.environ, {"ROAM_BINARY": "/nonexistent/roam"}):
            with self.assertRaisesRegex(roam_torch.PlanningError, "ROAM_BINARY=/nonexistent/roam"):
                roam_torch.plan_training_step(model, opt, focal_loss, x, y)
        env = {k: v for k, v in os.environ.items() if k != "ROAM_BINARY"}
        env["PATH"] = "/nonexistent"
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaisesRegex(roam_torch.PlanningError, "put `roam` on PATH"):
                roam_torch.plan_training_step(model, opt, focal_loss, x, y)


class Devices(unittest.TestCase):
    def test_a_model_on_two_devices_or_on_another_device_is_refused(self):
        model = ConvAttention()
        model.head.to("meta")
        with with_roam(), self.assertRaisesRegex(roam_torch.UserStepError,
                                                 r"model: .* on 2 devices \(cpu, meta\)"):
            roam_torch.plan_training_step(model, torch.optim.Adam(model.parameters()),
                                          focal_loss, *batch(torch.Generator()))
        model = ConvAttention().to("meta")
        with with_roam(), self.assertRaisesRegex(roam_torch.UserStepError,
                                                 "model: on meta; a planned step runs on the CPU or on CUDA"):
            roam_torch.plan_training_step(model, torch.optim.Adam(model.parameters()),
                                          focal_loss, *batch(torch.Generator()))


class VersionCheck(unittest.TestCase):
    def test_supported_and_unsupported_versions(self):
        self.assertEqual(compat.check_torch_version("1.13.0a0"), (1, 13))
        self.assertEqual(compat.check_torch_version("2.1.0+cu121"), (2, 1))
        self.assertEqual(compat.check_torch_version("2.11.0+cu130"), (2, 11))
        self.assertEqual(compat.check_torch_version(torch.__version__), compat.torch_release())
        with self.assertRaisesRegex(compat.UnsupportedTorch,
                                    r"PyTorch 2\.0\.1 is not supported.*1\.13 or 2\.1"):
            compat.check_torch_version("2.0.1")
        with self.assertRaisesRegex(compat.UnsupportedTorch, "1.12.1 is not supported"):
            compat.check_torch_version("1.12.1")

    def test_commands_refuse_an_unsupported_torch(self):
        import contextlib
        import export
        err = io.StringIO()
        with mock.patch.object(torch, "__version__", "2.0.0"), contextlib.redirect_stderr(err):
            status = export.main(["--model", "resnet18", "-o", os.devnull])
        self.assertEqual(status, 2)
        self.assertIn("export.py: error: PyTorch 2.0.0 is not supported", err.getvalue())

    def test_api_refuses_an_unsupported_torch(self):
        model = ConvAttention()
        with mock.patch.object(torch, "__version__", "2.0.1"):
            with self.assertRaisesRegex(roam_torch.UnsupportedTorch, "2.0.1 is not supported"):
                roam_torch.plan_training_step(model, torch.optim.Adam(model.parameters()),
                                              focal_loss, *batch(torch.Generator()))


if __name__ == "__main__":
    unittest.main()
