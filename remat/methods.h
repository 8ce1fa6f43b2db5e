// remat's methods in their two shapes (docs/remat.md, "Methods"): builders make a schedule
// for a target, improvers take one and return one never dearer and never over the target. The
// fit loop (fit.cpp) runs them as a preset lists them, through these.
//
// In: the plan's context, the parameters, a target and what a sweep shares between budgets.
// Out: a schedule (MethodResult) within the target where a method found one.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"
#include "remat/bound.h"
#include "remat/context.h"
#include "remat/internal.h"
#include "remat/params.h"

namespace roam::remat::detail {

// Seconds a search may still take under a deadline, finite (1e8 s: none), so that the solvers'
// own deadlines do not overflow; TimeLeft: under the plan's.
double SecondsLeft(const Deadline& deadline);
double TimeLeft(const Context& ctx);

// What fit.repack spends and learns over one budget's plan, whose fit loops (best's, each
// fit.alone builder's, each start order's) may leave the same layout over the budget: the
// windows left (fit.repack_plan_subproblems), and each layout repacked with what came of it.
// Repacking is deterministic, so a layout met again takes its outcome, not more windows.
struct RepackLedger {
  struct Done {
    std::vector<Interval> intervals;
    std::vector<Bytes> offsets;  // the layout that missed
    std::vector<Bytes> repacked;
    Bytes height = 0;  // of repacked
  };
  int left = 0;
  std::vector<Done> done;
};

// What one budget's plan has computed that its later fit loops meet again. A fit.alone
// builder's loop retraces best's targets wherever best picked that builder (random-layered-1000
// in seed 2's order at 80%: the same four schedules, built and laid out twice, 11 of 40 s), and
// a retry may reach a schedule laid out before. Builders marked repeatable, the layout and the
// repacking are deterministic (bounded by work), so what was computed once is taken again.
struct PlanMemo {
  struct Built {
    const Context* ctx;
    std::string_view method;
    Bytes target;
    MethodResult result;
  };
  struct LaidOut {
    const Context* ctx;
    Schedule schedule;
    Evaluated eval;
    std::vector<Bytes> offsets;
    Bytes actual = 0;
  };
  std::vector<Built> built;
  std::vector<LaidOut> laid_out;
  RepackLedger repack;
};

// Work a sweep shares between its budgets: the greedy descent's result for this budget (for
// the first attempt only: a layout retry lowers the target) and the checkpoint's schedules.
struct Shared {
  const MethodResult* greedy = nullptr;
  const std::vector<MethodResult>* checkpoint = nullptr;
  // The compute bound at bound_budget, computed once for the witness and the report.
  const OverheadBound* bound = nullptr;
  Bytes bound_budget = -1;
  // A recompute cost no schedule within the budget (hence within any lower target) goes below:
  // a schedule that meets it is optimal, and the methods after it are not run.
  double cost_bound = -std::numeric_limits<double>::infinity();
  // This budget's plan's builds, layouts and repacking, shared by its every fit loop (null
  // outside a plan: nothing kept).
  PlanMemo* memo = nullptr;
  // The recompute cost of a plan that already fits this budget (another start order's, or
  // best's before a fit.alone builder runs alone): the fit loop's result is kept only where it
  // is cheaper, so no search goes on past a schedule at this cost or more (infinity: none yet).
  double cost_to_beat = std::numeric_limits<double>::infinity();
};

// One call of the methods at a target: what they read besides the context.
struct Call {
  const Context& ctx;
  const RematParams& params;
  // Where the greedy starts (empty: from the base schedule) and, on return, the schedule it
  // ended with, so that a lower target continues from it (the fit loop's retries).
  Schedule& greedy_state;
  const Shared& shared;
  bool named;  // the method was named alone (not a preset's step)
  // What the plan's arena must fit: the user's budget, where a retry's target is below it.
  Bytes budget;
  // What the methods run to: the plan's deadline, or (the fit loop) one sooner, so that the
  // schedule they return is still laid out before the plan's (fit.layout_reserve). The exact
  // method and the block passes take their time limit in seconds from it (SecondsFor).
  Deadline deadline = ctx.deadline;
};

// The two shapes of a method.
using Builder = MethodResult (*)(Call&, Bytes target);
using Improver = MethodResult (*)(Call&, const MethodResult& incumbent, Bytes target);

// A method's name and its one shape (the other is null).
struct Named {
  std::string_view name;
  Builder build = nullptr;
  Improver improve = nullptr;
  // A builder whose schedule depends on the context, the parameters and the target alone (not
  // on the greedy's state or what a sweep shares): a plan builds it once per target.
  bool repeatable = false;
};

// The method of that name; InputError for an unknown one.
const Named& Find(std::string_view name);

// What params.method runs: `best`'s preset, a builder alone, or an improver on the greedy's
// schedule.
Preset PresetOf(const RematParams& params);

// The builders of the preset (the cheapest within target kept, else the lowest peak), then
// each improver in turn.
MethodResult RunPreset(Call& c, const Preset& preset, Bytes target);

}  // namespace roam::remat::detail
