// Ruin and recreate (method "lns"): a large-neighbourhood search from a schedule within target.
// Each round drops a few runs of copies, chosen at random, and lets the greedy's evictions at
// the peak repair what that raised, each step choosing at random among the few best; the
// repaired schedule is pruned and kept as the current one where it fits and costs at most a
// slack more (the slack shrinking to nothing over the rounds), the cheapest kept in the end.
// Seeded and bounded by rounds, it gives the same schedule on any machine.
#include <algorithm>
#include <cstdint>
#include <random>

#include "layout/best.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {

// A number in [0, n): mt19937_64's sequence is fixed by the standard, the distributions are not.
size_t Draw(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

// Whether a schedule's arena fits the budget: by best-fit or llfb, else by a layout search in
// capacity mode of at most lns.layout_max_nodes nodes (the fit loop's layout of the schedule
// is at least as low: it offers the same layouts first).
bool ArenaFits(const Graph& graph, const Schedule& schedule, Bytes budget,
               const RematParams& params, const Deadline& deadline) {
  const Evaluated e = Evaluate(graph, schedule, params);
  const std::vector<Interval> intervals = PlannedIntervals(e.model, e.lifetimes);
  layout::BestLayout layout(intervals, params.alignment);
  layout.OfferBestFit();
  if (layout.height() > budget) layout.OfferLlfb();
  if (layout.height() > budget && layout.height() > e.peak && params.lns.layout_max_nodes > 0) {
    layout::LayoutParams lp;
    lp.capacity = budget;
    lp.max_nodes = params.lns.layout_max_nodes;
    lp.time_limit_s = std::max(0.001, std::min(deadline.Remaining(), 1e8));
    layout.Search(lp);
  }
  return layout.height() <= budget;
}

}  // namespace

MethodResult RuinAndRecreate(const Graph& graph, const MethodResult& incumbent, Bytes target,
                             Bytes arena_budget, const RematParams& params,
                             const Deadline& deadline) {
  const LnsParams& lp = params.lns;
  if (incumbent.peak > target || graph.num_ops() > lp.max_ops || lp.rounds <= 0) return incumbent;
  GreedyTools tools(graph, params);
  GreedyState& state = tools.state;
  std::mt19937_64 rng(static_cast<std::uint64_t>(lp.seed));
  MethodResult best = incumbent;
  Schedule current = incumbent.schedule;
  double current_cost = incumbent.recompute_cost;
  for (int round = 0; round < lp.rounds; ++round) {
    if ((round & 15) == 0 && deadline.Expired()) break;  // rounds take under a millisecond here
    const std::vector<CopyRun> runs = CopyRuns(graph, tools.costs, current);
    if (runs.empty()) break;
    // Ruin: drop up to ruin_runs runs, latest first so that earlier positions stay valid.
    const size_t drops = 1 + Draw(rng, static_cast<size_t>(std::max(1, lp.ruin_runs)));
    std::vector<size_t> picked;
    for (size_t k = 0; k < drops && k < runs.size(); ++k) picked.push_back(Draw(rng, runs.size()));
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    Schedule trial = current;
    for (auto it = picked.rbegin(); it != picked.rend(); ++it)
      trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(runs[*it].begin),
                  trial.begin() + static_cast<std::ptrdiff_t>(runs[*it].end));
    if (!state.Reset(trial)) continue;
    // Recreate: evictions at the peak, each drawn among the choice_width best that apply.
    bool broken = false;
    for (int step = 0; step < lp.repair_steps && state.Peak() > target; ++step) {
      std::vector<Candidate> cs =
          CandidatesAt(state, state.PeakStep(), tools.costs, tools.flags, params);
      std::vector<size_t> usable;
      for (size_t i = 0; i < cs.size() && usable.size() < static_cast<size_t>(lp.choice_width); ++i)
        if (state.CanInsert(cs[i].at, cs[i].ops)) usable.push_back(i);
      if (usable.empty()) break;
      const Candidate& c = cs[usable[Draw(rng, usable.size())]];
      if (!state.Insert(c.at, c.ops)) {
        broken = true;
        break;
      }
    }
    if (broken || state.Peak() > target) continue;
    MethodResult r;
    r.schedule = state.schedule();
    r.peak = state.Peak();
    r.recompute_cost = state.RecomputeCost();
    PruneRepeats(graph, tools.costs, target, params, state, r);
    const double slack = lp.accept_slack * (1.0 - static_cast<double>(round) / lp.rounds);
    if (r.recompute_cost <= current_cost * (1.0 + slack)) {
      current = r.schedule;
      current_cost = r.recompute_cost;
    }
    // The arena is checked against the user's budget: at a fit retry's lower target, a schedule
    // whose arena is between the two fits the plan.
    if (r.recompute_cost < best.recompute_cost &&
        (FitByTheoretical(params) ||
         ArenaFits(graph, r.schedule, arena_budget, params, deadline))) {
      best = std::move(r);
      best.method = "lns";
      best.status = Status::kFeasible;
    }
  }
  return best;
}

}  // namespace roam::remat::detail
