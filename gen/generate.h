// Training-step graphs for the model families of configs/*.yaml (docs/generators.md).
//
// In: a checked ModelConfig and TrainingConfig. Out: a finalized Graph holding the forward
// pass in module order, the cross-entropy loss, the backward pass in autograd-engine order and
// the optimizer step, one op per aten operator, with program_order = PyTorch's eager order.
// Weights (kind weight), optimizer state (optimizer_state) and data and module buffers (input)
// are graph inputs; the loss is a graph output.
#pragma once

#include "core/graph.h"
#include "gen/config.h"

namespace roam::gen {

// Throws TensorTooLarge (an InputError) when a tensor would exceed kMaxBytes, and InputError
// when the graph would have more than kMaxGeneratedOps ops.
Graph GenerateGraph(const ModelConfig& model, const TrainingConfig& training);

// The same for a loaded config, with messages that name config.source and the key
// responsible: a too-large tensor names the keys its dimensions come from, and a transformer
// whose n_layer would exceed kMaxGeneratedOps is refused before generating, with the op count
// it would have.
Graph GenerateGraph(const Config& config);

}  // namespace roam::gen
