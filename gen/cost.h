// The per-op cost model of the generator (docs/formats.md, "Costs"): an estimate of each op's
// compute in FLOP-equivalents from its shapes, filled into Op::cost.
//
// In: the op's name and its operands in argument order (shapes, bytes, whether an output is a
// view). Out: max(FLOPs, kCostPerByte * bytes read and written), the roofline estimate on the
// reference device of core/graph.h. FLOPs are counted for matrix products and convolutions
// (2 per multiply-add); every other op is memory-bound. Views move no bytes and cost 0.
#pragma once

#include <span>
#include <string_view>

#include "gen/builder.h"

namespace roam::gen {

struct CostOperand {
  const Shape* shape = nullptr;
  Bytes bytes = 0;
};

double EstimateCost(std::string_view name, std::span<const CostOperand> inputs,
                    std::span<const CostOperand> outputs);

}  // namespace roam::gen
