// llama-tiny (configs/llama-tiny.yaml) as the generator makes it: two layers, AdamW,
// bf16-mixed. Header-only: only tests that link roam_gen and roam_config include it.
#pragma once

#include "config/config.h"
#include "core/graph.h"
#include "gen/generate.h"

namespace roam::testing {

inline Graph LlamaTiny() {
  return gen::GenerateGraph(roam::config::ParseConfig(
      "model: {family: llama, n_layer: 2, n_embd: 64, n_head: 4, n_kv_head: 2, n_inner: 96, "
      "seq_len: 16, n_positions: 16, vocab: 100, batch: 2, attention: math}\n"
      "training: {optimizer: adamw, precision: bf16-mixed}\n",
      "<test>"));
}

}  // namespace roam::testing
