// Test support: random graphs shaped like a training step, for stages that look for the
// structure of one (split points, mirrored backward, weight-update branches). Generic random
// DAGs rarely have it.
#pragma once

#include <random>
#include <vector>

#include "core/graph.h"

namespace roam::testing {

struct TrainingGraphOptions {
  int layers = 4;
  int max_paths = 3;           // parallel paths (each with its own weight) inside a layer
  double branch_prob = 0.4;    // a layer has more than one path
  double inplace_prob = 0.4;   // a path's activation runs in place, after a reader of the old value
  double residual_prob = 0.5;  // a layer adds its input to its output
  double long_skip_prob = 0.1;  // a layer also adds the input of an earlier layer
  double bias_prob = 0.5;       // a layer has a bias, with its own update branch
  bool adam = true;             // Adam (7 ops per weight, two state tensors) or SGD (1 op)
  // The backward pass starts from an op with no inputs ("aten.ones") instead of
  // "aten.ones_like(loss)", so the loss value has no consumer.
  double floating_loss_grad_prob = 0.5;
  // A weight gradient reads its layer's saved input through a view ("aten.t") made in the
  // backward.
  double view_again_prob = 0.0;
  bool phases = true;  // write ops[].phase
  Bytes max_size = 4096;
};

// Forward chain of layers (weight transposes "aten.t" of graph inputs, matmuls, activations,
// in-place activations with size-0 ordering edges from the readers of the old value, residual
// and long skip adds), a loss ("aten.nll_loss_forward", output), a backward pass consuming the
// saved activations in mirror order (the first layer computes only weight gradients), and per
// weight an optimizer branch of in-place updates of the weight and its state, each ordered
// after every reader of the old value by size-0 tensors. Tensor kinds are set; external ids
// are shuffled; program_order is the eager order (forward, backward, optimizer).
Graph TrainingLikeGraph(std::mt19937_64& rng, const TrainingGraphOptions& options = {});

// A training step of an MLP with `layers` layers: forward a_i = mm(a_{i-1}) from a 100-byte
// graph input, a loss ("aten.sum", 10 bytes), and a backward ("aten.mm_backward") that reads
// the incoming gradient and both activations of each layer in mirror order; activations and
// gradients are 100 bytes, the last gradient is the graph output. Ops are numbered forward,
// loss, backward; costs[i] is op i's cost (ops past the list cost 0; no list: no costs, so
// the remat cost model's defaults apply).
Graph MlpChain(int layers, const std::vector<double>& costs = {});

}  // namespace roam::testing
