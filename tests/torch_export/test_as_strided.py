"""efficientnet_b0's pattern: an in-place dropout on a flattened view, whose backward (autograd's
CopySlices) calls aten.as_strided with an absolute storage offset. The runner must count that
offset from the planned storage's place in the arena, not from the arena's base."""

import copy
import os
import unittest
from unittest import mock

import support

import torch
import torch.nn as nn
import torch.nn.functional as F

import roam_torch
from roam_torch import arena as ar


class FlattenInplaceDropout(nn.Module):
    """efficientnet_b0's tail: conv, SiLU, average pool, flatten, Dropout(inplace=True),
    linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2, inplace=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.flatten(self.pool(F.silu(self.conv(x))), 1)
        return self.fc(self.drop(x))


def plan():
    torch.manual_seed(0)
    model = FlattenInplaceDropout()
    eager = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(2, 3, 5, 5), torch.randint(0, 5, (2,))
    with mock.patch.dict(os.environ, {"ROAM_BINARY": support.roam_binary()}):
        planned = roam_torch.plan_training_step(model, opt, F.cross_entropy, x, y)
    return planned, model, eager, torch.optim.SGD(eager.parameters(), lr=0.1), x, y


class AbsoluteStorageOffset(unittest.TestCase):
    def test_pattern_runs_like_eager(self):
        planned, model, eager, eager_opt, x, y = plan()
        if support.ON_1_13:  # PyTorch 2's CopySlices copies through a view instead
            self.assertIn(torch.ops.aten.as_strided.default,
                          [n.target for n in planned.export.op_nodes])
        for k in range(2):
            torch.manual_seed(k)
            loss = planned.step(x, y)
            torch.manual_seed(k)
            eager_opt.zero_grad()
            eager_loss = F.cross_entropy(eager(x), y)
            eager_loss.backward()
            eager_opt.step()
            self.assertTrue(torch.equal(loss, eager_loss.detach()))
            for a, b in zip(model.parameters(), eager.parameters()):
                self.assertTrue(torch.equal(a, b))

    @unittest.skipUnless(support.ON_1_13, "PyTorch 2's CopySlices makes no as_strided")
    def test_without_the_mapping_the_runner_is_blamed(self):
        planned, _, _, _, x, y = plan()
        with mock.patch.dict(ar.ABSOLUTE_OFFSET_OPS, clear=True):
            with self.assertRaises(ar.PlacementError) as e:
                planned.step(x, y)
        message = str(e.exception)
        self.assertIn("aten.as_strided", message)
        self.assertIn("the runner is at fault", message)
        self.assertNotIn("memory model", message)


if __name__ == "__main__":
    unittest.main()
