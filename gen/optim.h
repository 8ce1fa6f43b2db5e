// torch.optim's step with foreach=False, one parameter at a time in parameter order
// (docs/generators.md lists the aten ops per optimizer).
//
// In: the tape after Backward(), the parameters in registration order, the training config.
// Out: optimizer-phase ops on the tape. Optimizer state (moments, momentum buffers) are graph
// inputs of kind optimizer_state updated in place; Adam's step counters are host tensors and
// not in the graph. Each gradient's last reader is its parameter's update, so it dies there.
// Parameters without a gradient are skipped, as torch.optim does. Under bf16-master precision
// the optimizer steps float32 master copies (inputs of kind optimizer_state) with float32
// copies of the gradients and copies each master back into its bfloat16 parameter.
#pragma once

#include <vector>

#include "gen/builder.h"
#include "gen/config.h"

namespace roam::gen {

void EmitOptimizerStep(Tape& tape, const std::vector<V>& params, const TrainingConfig& config);

}  // namespace roam::gen
