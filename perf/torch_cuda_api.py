#!/usr/bin/env python3
"""roam_torch's API on a CUDA GPU with roam's CUDA allocator (issue 25; perf/RESULTS.md, "The API
on CUDA: every op's scratch in the arena"): for each case, plan a user's training step with
roam_torch.plan_training_step, run it for a few steps beside an eager copy trained the usual way
(zero_grad, backward, step), and record the plan's bytes against the step's measured peak, both
counted by the same allocator.

  ROAM_BINARY=build/release/apps/roam python3 perf/torch_cuda_api.py OUT.jsonl \\
      convattn convattn-nocudnn gpt2-small resnet50-nocudnn

Every figure is a step's bytes above what was live before it (parameters, optimizer state, the
batch and the libraries' workspaces are persistent): planned = arena + what its ops allocated
outside the arena at once at most; eager = the most bytes allocated at once during its step.
Exit 1 when a case failed.
"""

import copy
import json
import os
import sys
import time
import traceback

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tools", "torch_export"))
sys.path.insert(0, os.path.join(here, "..", "tests", "torch_export"))

import roam_torch  # noqa: E402

roam_torch.install_cuda_allocator()  # before the first CUDA tensor

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roam_torch import memory  # noqa: E402

DEVICE = torch.device("cuda")


def convattn():
    from test_training_api import ConvAttention, focal_loss
    torch.manual_seed(0)
    model = ConvAttention(dropout=0.1).to(DEVICE)
    gen = torch.Generator().manual_seed(1)

    def batch():
        return (torch.randn(4, 3, 6, 6, generator=gen).to(DEVICE),
                torch.randint(0, 5, (4,), generator=gen).to(DEVICE))
    opt = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)  # noqa: E731
    return model, opt, focal_loss, batch, 3


def gpt2_small(dropout=0.0):
    from roam_torch.gpt2 import GPT2, GPT2Config
    torch.manual_seed(0)
    config = GPT2Config(dropout=dropout)
    model = GPT2(config).to(DEVICE)
    gen = torch.Generator().manual_seed(1)

    def batch():
        x = torch.randint(0, config.vocab, (1, config.seq_len), generator=gen)
        return x.to(DEVICE), torch.roll(x, -1, 1).to(DEVICE)

    def loss_fn(logits, y):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    opt = lambda m: torch.optim.Adam(m.parameters(), lr=1e-4)  # noqa: E731
    return model, opt, loss_fn, batch, 2


def resnet50():
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50().to(DEVICE)
    gen = torch.Generator().manual_seed(1)

    def batch():
        return (torch.randn(32, 3, 224, 224, generator=gen).to(DEVICE),
                torch.randint(0, 1000, (32,), generator=gen).to(DEVICE))
    opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)  # noqa: E731
    return model, opt, F.cross_entropy, batch, 2


# name -> (model maker, cuDNN on, budget_ratio)
CASES = {"convattn": (convattn, True, None), "convattn-nocudnn": (convattn, False, None),
         "gpt2-small": (gpt2_small, True, None),
         "gpt2-small-dropout": (lambda: gpt2_small(0.1), True, None),
         "gpt2-small-remat": (gpt2_small, True, 0.7),
         "resnet50": (resnet50, True, None), "resnet50-nocudnn": (resnet50, False, None),
         "resnet50-nocudnn-remat": (resnet50, False, 0.7)}


def max_relative(a, b):
    worst = 0.0
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            d = (x.double() - y.double()).abs().max().item()
            scale = y.double().abs().max().item()
            worst = max(worst, d / scale if scale > 0 else d)
    return worst


def run(name):
    make, cudnn, budget_ratio = CASES[name]
    torch.backends.cudnn.enabled = cudnn
    model, make_opt, loss_fn, batch, steps = make()
    eager_model = copy.deepcopy(model)
    opt, eager_opt = make_opt(model), make_opt(eager_model)
    x, y = batch()
    t0 = time.time()
    planned = roam_torch.plan_training_step(model, opt, loss_fn, x, y,
                                            budget_ratio=budget_ratio)
    plan_s = time.time() - t0
    losses, eager_losses, eager_peaks = [], [], []
    for k in range(steps):
        x, y = batch()
        torch.manual_seed(100 + k)
        losses.append(float(planned.step(x, y)))

        # The last step's gradients are dropped before the count starts: the planned step's
        # gradients are arena tensors of the step too.
        eager_opt.zero_grad(set_to_none=True)

        def eager_step():
            loss = loss_fn(eager_model(x), y)
            loss.backward()
            eager_opt.step()
            return loss
        torch.manual_seed(100 + k)
        loss, peak = memory.peak_outside(eager_step, DEVICE)
        eager_losses.append(float(loss.detach()))
        eager_peaks.append(peak)
    torch.cuda.synchronize()
    mem = planned.memory()
    out = {"case": name, "cudnn": cudnn, "budget_ratio": budget_ratio, "plan_s": round(plan_s, 1), "steps": steps,
           "losses": losses, "eager_losses": eager_losses,
           "params_max_rel_diff": max_relative(model.state_dict(), eager_model.state_dict()),
           "eager_step_peak_bytes": eager_peaks, "memory": mem,
           "measured_over_planned": (mem["measured_peak_bytes"] / mem["planned_total_bytes"]
                                     if mem.get("measured_peak_bytes") else None),
           "planned_over_eager": (mem["measured_peak_bytes"] / eager_peaks[-1]
                                  if mem.get("measured_peak_bytes") else None)}
    return out


def main():
    path, names = sys.argv[1], sys.argv[2:]
    status = 0
    with open(path, "a", encoding="utf-8") as f:
        for name in names:
            t0 = time.time()
            try:
                result = run(name)
            except Exception as e:  # a failed case is a result too
                result = {"case": name, "error": f"{type(e).__name__}: {e}",
                          "trace": traceback.format_exc()[-3000:]}
                status = 1
            result["wall_s"] = round(time.time() - t0, 1)
            line = json.dumps(result, default=str)
            print(line, flush=True)
            f.write(line + "\n")
            f.flush()
            torch.cuda.synchronize()
    return status


if __name__ == "__main__":
    sys.exit(main())
