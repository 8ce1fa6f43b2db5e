// Synthetic training-step graphs for the benchmarks: deterministic, shaped like a transformer
// training step so that the planners see realistic structure at realistic scale.
#pragma once

#include "core/graph.h"

namespace roam::perf {

struct TrainingGraphParams {
  int blocks = 125;              // transformer-ish blocks of 120 ops, plus 13 for the head
  Bytes activation = 6'553'600;  // one [batch, seq, hidden] activation (1 x 1024 x 1600 fp32)
  Bytes attention = 26'214'400;  // one attention-score tensor per block
  Bytes hidden = 1600;           // model width: parameter sizes derive from it
};

// Forward: per block layer norm, qkv projection with three views of its output, attention
// (scores, softmax, context), output projection, residual add, layer norm, MLP (fc1, gelu,
// fc2), residual add; the activations are saved for the backward pass. Then a loss (an
// output), the backward pass mirroring every forward op (data gradients, weight and bias
// gradients), and an Adam update per parameter: in-place aliases of the persistent weights and
// optimizer state, a temporary denominator, and a size-0 ordering edge from the parameter's
// last backward reader to its in-place update. program_order is the creation order.
Graph TrainingGraph(const TrainingGraphParams& params = {});

// The number of blocks giving at least `ops` ops.
int BlocksForOps(int ops);

}  // namespace roam::perf
