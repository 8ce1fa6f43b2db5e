// The llama family (docs/generators.md, "llama"): a LLaMA-style decoder as
// tools/torch_export/roam_torch/llama.py writes it, in fp32 or under bf16 autocast.
#pragma once

#include "core/graph.h"
#include "gen/config.h"

namespace roam::gen {

// The training step of a checked llama ModelConfig (GenerateGraph dispatches here).
Graph Llama(const ModelConfig& model, const TrainingConfig& training);

// Meta's FeedForward width when model.n_inner is 0: 2/3 of 4 * n_embd, rounded up to a
// multiple of 256 (11008 for n_embd 4096).
std::int64_t LlamaFfnWidth(const ModelConfig& model);

}  // namespace roam::gen
