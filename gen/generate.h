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

Graph GenerateGraph(const ModelConfig& model, const TrainingConfig& training);
inline Graph GenerateGraph(const Config& config) {
  return GenerateGraph(config.model, config.training);
}

}  // namespace roam::gen
