// The fit loop (docs/remat.md, "Fitting by the arena"): one preset's methods (methods.h) meet a
// target on the theoretical peak, their schedule is laid out in an arena, and where the arena
// misses the budget the target is lowered and the methods rerun; then the misses are repacked
// and, for `best`, the fallbacks tried. remat.cpp runs it for best, each fit.alone builder and
// each start order.
//
// In: the plan's context, the budget, the parameters and what the plan shares (its memo, the
// compute bound, the cost a plan found before must be beaten by).
// Out: the plan: the rewritten graph, its order and offsets, validated, with its status.
#pragma once

#include "core/types.h"
#include "remat/context.h"
#include "remat/methods.h"
#include "remat/params.h"
#include "remat/remat.h"

namespace roam::remat::detail {

// greedy_state: where the greedy starts and, on return, where it ended (a sweep's descent).
// shared.memo must be set: the plan's builds, layouts and repack allowance.
// Where shared.cost_to_beat is finite, the loop stops at the first schedule that costs as much,
// as its retries lower the target and recompute more as a rule, and no miss that costs as much
// is repacked: such a plan would not be kept.
RematResult Fit(const Context& ctx, Bytes budget, const RematParams& params, Schedule& greedy_state,
                Shared shared);

}  // namespace roam::remat::detail
