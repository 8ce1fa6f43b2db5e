// remat's methods behind one table (methods.h): each method's name, shape and call.
#include "remat/methods.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"

namespace roam::remat::detail {
namespace {

// The seconds a method taking a time limit may spend: what is left of the call's deadline, at
// least a millisecond, as their 0 means no limit (the preset runs none past the deadline).
double SecondsFor(const Call& c) { return std::max(1e-3, SecondsLeft(c.deadline)); }

MethodResult BuildGreedy(Call& c, Bytes target) {
  MethodResult r = c.shared.greedy != nullptr
                       ? *c.shared.greedy
                       : Greedy(c.ctx.graph, c.greedy_state.empty() ? c.ctx.start : c.greedy_state,
                                target, c.params, GreedyEvaluation::kIncremental, &c.deadline);
  c.greedy_state = r.schedule;
  return r;
}

MethodResult BuildCheckpoint(Call& c, Bytes target) {
  return c.shared.checkpoint != nullptr
             ? PickCheckpoint(*c.shared.checkpoint, target)
             : Checkpoint(c.ctx.graph, c.ctx.start, target, c.params, &c.ctx.Partition());
}

MethodResult BuildLookahead(Call& c, Bytes target) {
  return Lookahead(c.ctx.graph, c.ctx.start, target, c.params, c.deadline);
}

MethodResult RunBlocks(Call& c, const MethodResult& incumbent, Bytes target) {
  return ImproveByBlocks(c.ctx.graph, c.ctx.start, incumbent, target, c.params, SecondsFor(c),
                         &c.ctx.Partition());
}

MethodResult SplitBudget(Call& c, const MethodResult& incumbent, Bytes target) {
  return SplitBudgetByBlocks(c.ctx.graph, c.ctx.start, incumbent, target, c.params, SecondsFor(c),
                             &c.ctx.Partition());
}

// In a preset it needs the compute bound (overhead_bound.cuts > 0), and runs at a fit
// retry's target only with witness.at_retries; named alone, it computes one at one cut at
// least, at any target.
MethodResult RunWitness(Call& c, const MethodResult& incumbent, Bytes target) {
  if (c.shared.bound != nullptr && c.shared.bound_budget == target)
    return FollowWitness(c.ctx.graph, c.ctx.start, incumbent, target, c.params, *c.shared.bound);
  if (!c.named && (c.params.overhead_bound.cuts <= 0 || !c.params.witness.at_retries))
    return incumbent;
  RematParams p = c.params;
  p.overhead_bound.cuts = std::max(1, p.overhead_bound.cuts);
  return FollowWitness(c.ctx.graph, c.ctx.start, incumbent, target, c.params,
                       OverheadLowerBound(c.ctx.graph, target, p));
}

// The exact method on graphs up to ilp.max_ops, warm-started from the incumbent.
MethodResult SolveExactly(Call& c, const MethodResult& incumbent, Bytes target) {
  // Below the peak lower bound nothing fits: the MILP would spend its time for nothing.
  if (c.ctx.graph.num_ops() > c.params.ilp.max_ops || target < c.ctx.peak_lower_bound)
    return incumbent;
  return Exact(c.ctx.graph, c.ctx.start, target, c.params, incumbent, SecondsFor(c),
               c.shared.cost_bound);
}

MethodResult RunLns(Call& c, const MethodResult& incumbent, Bytes target) {
  return RuinAndRecreate(c.ctx.graph, incumbent, target, c.budget, c.params, c.deadline);
}

}  // namespace

double SecondsLeft(const Deadline& deadline) { return std::min(deadline.Remaining(), 1e8); }
double TimeLeft(const Context& ctx) { return SecondsLeft(ctx.deadline); }

constexpr Named kMethods[] = {
    {"greedy", BuildGreedy, nullptr},
    {"checkpoint", BuildCheckpoint, nullptr},
    {"lookahead", BuildLookahead, nullptr, true},
    {"blocks", nullptr, RunBlocks},
    {"blocks-dp", nullptr, SplitBudget},
    {"witness", nullptr, RunWitness},
    {"ilp", nullptr, SolveExactly},
    {"lns", nullptr, RunLns},
};

const Named& Find(std::string_view name) {
  for (const Named& m : kMethods)
    if (m.name == name) return m;
  throw InputError("unknown remat method \"" + std::string(name) + "\"");
}

// What params.method runs: `best`'s preset, a builder alone, or an improver on the greedy's
// schedule.
Preset PresetOf(const RematParams& params) {
  if (params.method == "best") return params.best;
  if (Find(params.method).build != nullptr) return {{params.method}, {}};
  return {{"greedy"}, {params.method}};
}

namespace {

// A builder's schedule for target, from the plan's memo where the builder is repeatable and
// built it before in this context.
MethodResult Build(Call& c, const Named& builder, Bytes target) {
  PlanMemo* memo = c.shared.memo;
  if (memo == nullptr || !builder.repeatable) return builder.build(c, target);
  for (const PlanMemo::Built& b : memo->built)
    if (b.ctx == &c.ctx && b.method == builder.name && b.target == target) return b.result;
  MethodResult r = builder.build(c, target);
  memo->built.push_back({&c.ctx, builder.name, target, r});
  return r;
}

}  // namespace

// The builders of the preset, ordered by Better (the cheapest within target first, else the
// lowest peak); each improver in turn on the first preset.picks distinct schedules, the better
// result kept: what the improvers make of a schedule is not monotone in its cost.
MethodResult RunPreset(Call& c, const Preset& preset, Bytes target) {
  std::vector<MethodResult> built;
  for (const std::string& name : preset.build) built.push_back(Build(c, Find(name), target));
  if (built.empty()) throw InputError("a remat preset needs at least one builder");
  std::stable_sort(built.begin(), built.end(), [&](const MethodResult& a, const MethodResult& b) {
    return Better(a, b, target);
  });
  std::optional<MethodResult> best;
  for (std::size_t i = 0; i < built.size() && static_cast<int>(i) < std::max(1, preset.picks);
       ++i) {
    MethodResult r = std::move(built[i]);
    if (best && r.schedule == best->schedule) continue;
    for (const std::string& name : preset.improve) {
      if (MeetsCostBound(r, target, c.shared.cost_bound) || c.deadline.Expired()) break;
      r = Find(name).improve(c, r, target);
    }
    if (!best || Better(r, *best, target)) best = std::move(r);
  }
  return std::move(*best);
}

}  // namespace roam::remat::detail
