"""The traced step, run on small real tensors, reproduces eager PyTorch: loss, parameters,
buffers and optimizer state after the step. Running its ops in other orders the roam graph
allows gives the same numbers, so the graph's dependencies (including the size-0 ordering
tensors around in-place writes) are sufficient."""

import unittest

import torch

import support as s


def clone_all(tensors):
    return [t.detach().clone() for t in tensors]


class TracedStepReproducesEager(unittest.TestCase):
    def check(self, spec, model_fn=None, orders=True):
        traced, graph, _, op_nodes = s.trace(spec, model_fn)
        eager_inputs = s.step_inputs(spec, model_fn, seed=7)
        start = clone_all(eager_inputs.tensors)
        eager_loss = s.eager_step(spec, eager_inputs)
        expected = clone_all(eager_inputs.tensors)
        # Something must change, or the comparison below proves nothing.
        changed = sum(not torch.equal(a, b) for a, b in zip(start, expected))
        self.assertGreater(changed, len(start) // 2)

        def compare(loss, tensors, what):
            torch.testing.assert_close(loss, eager_loss.detach(), rtol=1e-5, atol=1e-6,
                                       msg=f"loss ({what})")
            for name, got, want in zip(eager_inputs.names, tensors, expected):
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6,
                                           msg=f"{name} after the step ({what})")

        program = clone_all(start)
        compare(s.traced_step(traced, program), program, "program order")

        if not orders:
            return
        self.assertTrue(s.is_topological(graph, graph["program_order"]))
        for label, order in [("latest-first", s.latest_first_order(graph)),
                             ("random 1", s.random_order(graph, 1)),
                             ("random 2", s.random_order(graph, 2))]:
            self.assertNotEqual(order, graph["program_order"])
            tensors = clone_all(start)
            compare(s.run_in_order(traced, op_nodes, order, tensors), tensors, label)

    def test_small_cnn_with_batch_norm_residual_add_and_adam(self):
        self.check(s.cnn_spec("adam"), lambda: s.SmallCNN())

    def test_small_cnn_with_sgd_momentum(self):
        self.check(s.cnn_spec("sgd", momentum=0.9), lambda: s.SmallCNN())

    def test_small_cnn_with_silu_and_adamw(self):
        self.check(s.cnn_spec("adamw"), lambda: s.SmallCNN(act=torch.nn.SiLU()))

    def test_tiny_gpt_with_tied_embeddings_and_adam(self):
        self.check(s.gpt_spec(dropout=0.0))

    def test_tiny_gpt_with_cuda_form_dropout(self):
        # Same seed, same RNG consumption: native_dropout's masks agree between the two runs.
        # Reordering would change the order random numbers are drawn in, so program order only.
        spec = s.gpt_spec(dropout=0.25)
        self.check(spec, orders=False)

    def test_eager_run_under_cuda_dropout_uses_native_dropout(self):
        # Guards the comparison above: the eager side must also run the fused kernel.
        from torch.utils._python_dispatch import TorchDispatchMode

        seen = []

        class Log(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func.overloadpacket))
                return func(*args, **(kwargs or {}))

        spec = s.gpt_spec(dropout=0.25)
        inputs = s.step_inputs(spec)
        with Log():
            s.eager_step(spec, inputs)
        self.assertIn("aten.native_dropout", seen)
        self.assertNotIn("aten.bernoulli_", seen)


if __name__ == "__main__":
    unittest.main()
