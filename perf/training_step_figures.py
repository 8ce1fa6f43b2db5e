#!/usr/bin/python3
"""Figures of perf/RESULTS.md's "Planned training steps in the user's loop" section: plans one
model's training step with roam_torch.plan_training_step, runs K steps on fresh batches beside
an eager deep copy, and prints one markdown row: the plan's arena, the measured peak (every byte
allocated during the last step, arena and outside), their ratio, the op temporaries, whether
the losses, parameters, buffers and optimizer state stayed bit-identical, and timings.

  ROAM_BINARY=build/release/apps/roam /usr/bin/python3 perf/training_step_figures.py \\
      resnet18 --batch 8 --image-size 64 [--steps 3] [--budget-ratio R] [--no-op-scratch]

MODEL is a torchvision classification model, or gpt2:LAYERS:WIDTH:HEADS:SEQ for the built-in
nanoGPT (vocabulary 50257, positions = SEQ, no dropout).
"""

import argparse
import copy
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "torch_export"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import roam_torch  # noqa: E402


def build(name, batch, image_size, gen):
    """(model, loss_fn, make_batch)."""
    if name.startswith("gpt2:"):
        from roam_torch.gpt2 import GPT2, GPT2Config

        layers, width, heads, seq = (int(v) for v in name.split(":")[1:])
        model = GPT2(GPT2Config(n_layer=layers, n_embd=width, n_head=heads, seq_len=seq,
                                n_positions=seq, dropout=0.0))

        def loss_fn(logits, y):
            return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))

        def make_batch():
            return (torch.randint(0, 50257, (batch, seq), generator=gen),
                    torch.randint(0, 50257, (batch, seq), generator=gen))
        return model, loss_fn, make_batch
    import torchvision.models

    model = torchvision.models.get_model(name, num_classes=10)

    def make_batch():
        return (torch.randn(batch, 3, image_size, image_size, generator=gen),
                torch.randint(0, 10, (batch,), generator=gen))
    return model, F.cross_entropy, make_batch


def equal_states(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal_states(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(equal_states(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--budget-ratio", type=float, default=None)
    p.add_argument("--no-op-scratch", action="store_true")
    p.add_argument("--time-limit", type=float, default=60)
    args = p.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model, loss_fn, make_batch = build(args.model, args.batch, args.image_size, gen)
    model.train()
    eager = copy.deepcopy(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    eager_opt = torch.optim.Adam(eager.parameters(), lr=1e-3)
    x, y = make_batch()
    t0 = time.time()
    planned = roam_torch.plan_training_step(model, opt, loss_fn, x, y,
                                            budget_ratio=args.budget_ratio,
                                            time_limit=args.time_limit,
                                            op_scratch=not args.no_op_scratch)
    plan_s = time.time() - t0
    same, step_s = True, []
    for k in range(args.steps):
        x, y = make_batch()
        torch.manual_seed(10 + k)
        t = time.time()
        loss = planned.step(x, y)
        step_s.append(time.time() - t)
        torch.manual_seed(10 + k)
        eager_opt.zero_grad()
        eager_loss = loss_fn(eager(x), y)
        eager_loss.backward()
        eager_opt.step()
        same = same and torch.equal(loss, eager_loss.detach()) and \
            equal_states(model.state_dict(), eager.state_dict()) and \
            equal_states(opt.state_dict(), eager_opt.state_dict())
    m = planned.memory()
    mib = 2 ** 20
    ratio = m["measured_peak_bytes"] / m["planned_total_bytes"]
    what = args.model if args.model.startswith("gpt2:") else \
        f"{args.model} b{args.batch} {args.image_size}px"
    how = "optimize" if args.budget_ratio is None else f"remat {args.budget_ratio}"
    print(f"| {what} | {how} | {m['ops']:,} | {m['arena_bytes'] / mib:,.2f} | "
          f"{m['measured_peak_bytes'] / mib:,.2f} | {ratio:.4f} | "
          f"{m['outside_arena_peak_bytes'] / mib:,.3f} | {m['op_scratch_ops']} / "
          f"{m['op_scratch_bytes'] / mib:,.2f} | {'yes' if same else 'NO'} | {plan_s:.0f} | "
          f"{min(step_s):.2f} |")
    if m["op_scratch_in_arena"] != "yes":
        print(f"op scratch: {m['op_scratch_in_arena']}", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
