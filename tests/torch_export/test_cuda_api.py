"""roam_torch's API on a CUDA GPU with roam's CUDA allocator (docs/torch-export.md, "Op scratch on
CUDA"). Skipped where PyTorch has no CUDA device (CI's machines): run it on a GPU machine with
`ROAM_BINARY=build/release/apps/roam python3 -m unittest test_cuda_api` from this folder.

Each case runs in a fresh process, since the allocator must be installed before the process's
first CUDA tensor. The measurements it encodes were taken on an H200 (perf/RESULTS.md, "The API
on CUDA"); the test itself was written after them, when no GPU was left to run it on."""

import json
import os
import subprocess
import sys
import unittest

import support

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Plans the API test's ConvAttention model (batch norm with cuDNN on, attention, dropout) under
# SGD with momentum, runs three steps beside an eager copy, prints the figures as JSON.
STEPS = r"""
import copy, json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import roam_torch
roam_torch.install_cuda_allocator()
import torch
from test_training_api import ConvAttention, focal_loss
torch.manual_seed(0)
model = ConvAttention(dropout=0.1).cuda()
eager = copy.deepcopy(model)
make = lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
opt, eager_opt = make(model), make(eager)
gen = torch.Generator().manual_seed(1)
batch = lambda: (torch.randn(4, 3, 6, 6, generator=gen).cuda(),
                 torch.randint(0, 5, (4,), generator=gen).cuda())
planned = roam_torch.plan_training_step(model, opt, focal_loss, *batch())
losses = []
for k in range(3):
    x, y = batch()
    torch.manual_seed(100 + k)
    loss = planned.step(x, y)
    torch.manual_seed(100 + k)
    eager_opt.zero_grad()
    eager_loss = focal_loss(eager(x), y)
    eager_loss.backward()
    eager_opt.step()
    losses.append((float(loss), float(eager_loss)))
worst = 0.0
for k, v in model.state_dict().items():
    e = eager.state_dict()[k]
    if v.is_floating_point() and v.numel():
        scale = float(e.abs().max())
        worst = max(worst, float((v - e).abs().max()) / (scale if scale > 0 else 1.0))
print(json.dumps({"memory": planned.memory(), "losses": losses, "worst": worst}))
"""

LATE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import torch
torch.ones(1, device="cuda")
import roam_torch
try:
    roam_torch.install_cuda_allocator()
except roam_torch.NotInstalled as e:
    print("refused:", e)
"""


def run(script):
    env = dict(os.environ, ROAM_BINARY=support.roam_binary())
    return subprocess.run([sys.executable, "-c", script, support.TOOL_DIR, HERE],
                          capture_output=True, text=True, env=env, timeout=600)


@unittest.skipUnless(torch.cuda.is_available(), "this PyTorch has no CUDA device")
class ApiOnCuda(unittest.TestCase):
    def test_three_steps_match_eager_and_the_peak_is_the_plan(self):
        r = run(STEPS)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        mem = out["memory"]
        self.assertEqual(mem["op_scratch_in_arena"], "yes")
        self.assertEqual(mem["steps"], 3)
        self.assertEqual(mem["eager_steps"], 1)  # SGD's momentum buffers made eagerly
        self.assertEqual(mem["outside_arena_peak_bytes"], 0)
        self.assertLessEqual(mem["measured_peak_bytes"], mem["planned_total_bytes"] * 1.01)
        for planned, eager in out["losses"]:
            self.assertAlmostEqual(planned, eager, delta=1e-5 * abs(eager))
        # run_plan.py's CUDA tolerance: kernels may pick other algorithms at other addresses.
        self.assertLess(out["worst"], 1e-4)

    def test_installing_after_the_first_cuda_tensor_is_refused_by_name(self):
        r = run(LATE)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("refused:", r.stdout)
        self.assertIn("install_cuda_allocator() before the first CUDA tensor", r.stdout)


if __name__ == "__main__":
    unittest.main()
