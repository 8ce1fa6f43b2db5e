// The fit loop (fit.h): the layouts of a preset's schedules against the budget, the retries at
// lower targets, the repacking of the misses and best's fallbacks.
#include "remat/fit.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "baseline/orders.h"
#include "core/deadline.h"
#include "layout/best.h"
#include "layout/layout.h"
#include "layout/repack.h"
#include "remat/internal.h"

namespace roam::remat::detail {

namespace {

// Offsets of a schedule's buffers and the arena's height: best-fit, then llfb, then the
// layout search where both miss the theoretical peak, and where the arena is still over the
// budget, the search once more with its bottom-left branching in groups of any size, then a
// search for a layout within the budget alone (fit.search_wide, fit.search_at_budget).
std::pair<std::vector<Bytes>, Bytes> LayOut(std::span<const Interval> intervals, Bytes peak,
                                            Bytes budget, const RematParams& params,
                                            const Deadline& deadline) {
  layout::BestLayout best(intervals, params.alignment);
  best.OfferBestFit();
  if (best.height() > peak) best.OfferLlfb();
  auto search = [&](bool wide, std::optional<Bytes> capacity) {
    layout::LayoutParams lp;
    // Each search to the time it has left: the run's deadline is one, whatever runs.
    lp.time_limit_s = std::max(
        0.001, std::min(params.fit.search_time_limit_s, std::min(deadline.Remaining(), 1e8)));
    lp.max_nodes = params.fit.search_max_nodes;
    lp.max_work = params.fit.search_max_work;
    lp.capacity = capacity;
    if (wide) {
      // The default limits keep these techniques to groups of 1,000 buffers for whole training
      // graphs' sake (docs/layout.md); a rewritten graph of 1,000 ops and its copies is one
      // group just above, and packs to its theoretical peak with them (perf/RESULTS.md).
      lp.search.bottom_left_max_buffers = std::numeric_limits<int>::max();
      lp.search.unallocated_floor_max_buffers = std::numeric_limits<int>::max();
    }
    best.Search(lp);
  };
  // The greedy layouts missed the theoretical peak: the search engine closes the gap that
  // would otherwise cost a retry (a lower target, more recomputation).
  auto searching = [&] { return params.fit.search_max_nodes > 0 && !deadline.Expired(); };
  auto missed = [&] { return best.height() > budget && best.height() > peak && searching(); };
  if (best.height() > peak && searching()) search(false, std::nullopt);
  if (missed() && params.fit.search_wide &&
      intervals.size() <= static_cast<size_t>(params.fit.search_wide_max_buffers))
    search(true, std::nullopt);
  // Minimising, the search spends its nodes on heights below the budget too; asked for the
  // budget alone, it prunes by it and may find a layout there the minimisation did not.
  if (missed() && params.fit.search_at_budget) search(false, budget);
  const Bytes height = best.height();
  return {best.TakeOffsets(), height};
}

// The baseline order of that name on the context's graph (the context's start for base_order).
Schedule OrderSchedule(const Context& ctx, const RematParams& params, const std::string& order) {
  return order == params.base_order ? ctx.start : StartOrder(order, ctx.graph, ctx.model, params);
}

// Where the chosen schedule's arena misses the budget (fragmentation, or a theoretical peak
// above it): the greedy from base_order and from each of fit.fallback_base_orders, with chains
// of greedy.max_chain and of fit.long_chain ops. Their schedules within target by the
// theoretical peak, cheapest first, distinct, for the caller to lay out.
// Each fallback is one greedy descent and at most two node-bounded layout searches; they stop
// where `deadline` (the methods') has passed.
std::vector<MethodResult> Fallbacks(const Context& ctx, Bytes target, const RematParams& params,
                                    const Deadline& deadline) {
  std::vector<std::string> orders = {params.base_order};
  for (const std::string& o : params.fit.fallback_base_orders)
    if (std::find(orders.begin(), orders.end(), o) == orders.end()) orders.push_back(o);
  std::vector<int> chains = {params.greedy.max_chain};
  if (params.fit.long_chain > params.greedy.max_chain) chains.push_back(params.fit.long_chain);
  std::vector<MethodResult> found;
  for (const std::string& order : orders) {
    RematParams p = params;
    p.base_order = order;
    const Schedule start = OrderSchedule(ctx, params, order);
    for (int chain : chains) {
      if (deadline.Expired()) break;
      p.greedy.max_chain = chain;
      MethodResult r = detail::Greedy(ctx.graph, start, target, p,
                                      detail::GreedyEvaluation::kIncremental, &deadline);
      if (r.peak > target) continue;
      if (std::any_of(found.begin(), found.end(),
                      [&](const MethodResult& f) { return f.schedule == r.schedule; }))
        continue;
      r.method = "greedy";
      r.order = order;
      found.push_back(std::move(r));
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const MethodResult& a, const MethodResult& b) {
    return a.recompute_cost < b.recompute_cost;
  });
  return found;
}

// The deadline one attempt's methods run to: fit.layout_reserve of the time left (at most a
// layout search's cap) sooner than the plan's, so that the schedule they return is laid out
// with a search before the plan's deadline. Without it, a method that ran to the deadline (the
// exact method's MILP on random-layered-40 at 80% with --time-limit 5) left its schedule,
// within the budget by its theoretical peak, to best-fit and llfb alone, and the plan was
// reported out of reach.
Deadline MethodsDeadline(const Context& ctx, const RematParams& params) {
  return ctx.deadline.Sooner(
      std::min(params.fit.layout_reserve * TimeLeft(ctx), params.fit.search_time_limit_s));
}

// A schedule laid out: its evaluation, offsets and arena.
struct Laid {
  MethodResult method;
  detail::Evaluated eval;
  std::vector<Bytes> offsets;
  Bytes actual = std::numeric_limits<Bytes>::max();
  Bytes measured = std::numeric_limits<Bytes>::max();  // what the budget bounds: fit.by
  bool repacked = false;                               // offsets from fit.repack
  // The theoretical peak the methods were asked to meet: the budget, or a retry's lower
  // target, where what the exact method proved (its optimum, its bound) holds only there.
  Bytes target = 0;
};

// memo (may be null): the plan's layouts, for a schedule laid out again (a fit.alone builder's
// loop retracing best's, a retry that reaches a schedule met before). target: what r was asked
// to meet.
Laid LayOutSchedule(const Context& ctx, MethodResult r, Bytes target, Bytes budget,
                    const RematParams& params, PlanMemo* memo) {
  Laid l;
  l.target = target;
  const PlanMemo::LaidOut* met = nullptr;
  if (memo != nullptr)
    for (const PlanMemo::LaidOut& m : memo->laid_out)
      if (m.ctx == &ctx && m.schedule == r.schedule) met = &m;
  if (met != nullptr) {
    l.eval = met->eval;
    l.offsets = met->offsets;
    l.actual = met->actual;
  } else {
    l.eval = detail::Evaluate(ctx.graph, r.schedule, params);
    auto intervals = PlannedIntervals(l.eval.model, l.eval.lifetimes);
    std::tie(l.offsets, l.actual) = LayOut(intervals, l.eval.peak, budget, params, ctx.deadline);
    if (memo != nullptr) memo->laid_out.push_back({&ctx, r.schedule, l.eval, l.offsets, l.actual});
  }
  l.measured = FitByTheoretical(params) ? l.eval.peak : l.actual;
  l.method = std::move(r);
  return l;
}

// Of two laid-out schedules for budget: the one that fits (by fit.by) at less compute, else
// the lower peak so measured.
bool Better(const Laid& a, const Laid& b, Bytes budget) {
  return detail::BetterPlan(a.measured, a.eval.recompute_cost, b.measured, b.eval.recompute_cost,
                            budget);
}

// The first of fit.reorder_orders whose plain plan (no recomputation) fits the budget, laid
// out; nullopt where none does.
std::optional<Laid> WithoutRecomputation(const Context& ctx, Bytes budget,
                                         const RematParams& params) {
  for (const std::string& order : params.fit.reorder_orders) {
    if (ctx.deadline.Expired()) break;
    MethodResult r;
    r.method = "reorder";
    r.order = order;
    r.status = Status::kOptimal;  // no recomputation: nothing is cheaper
    r.schedule = OrderSchedule(ctx, params, order);
    r.peak = TheoreticalPeak(ctx.graph, ctx.model, r.schedule);
    if (r.peak > budget) continue;
    Laid l = LayOutSchedule(ctx, std::move(r), budget, budget, params, nullptr);
    if (l.measured <= budget) return l;
  }
  return std::nullopt;
}

// A schedule within the budget by its theoretical peak whose arena missed it: repacking its
// layout (fit.repack) may fit it.
bool RepackMay(const Laid& l, Bytes budget, const RematParams& params) {
  return params.fit.repack.max_subproblems > 0 && l.measured > budget && l.eval.peak <= budget;
}

// fit.repack: the schedules the fit loop laid out above the budget, cheapest first, while
// cheaper than the plan (or while the plan misses too): the first whose repacked layout fits
// becomes the plan. After the loop, so that its retries and their targets, and every plan it
// finds, stay what they were; repacking only adds cheaper fits.
// Each layout's windows come out of the plan's allowance, so the plan's work is bounded however
// many misses its fit loops leave; a layout the plan repacked before takes that outcome again.
void RepackMisses(const Context& ctx, Bytes budget, const RematParams& params,
                  std::vector<Laid>& misses, Laid& best, RepackLedger& ledger,
                  double cost_to_beat) {
  std::stable_sort(misses.begin(), misses.end(), [](const Laid& a, const Laid& b) {
    return a.eval.recompute_cost < b.eval.recompute_cost;
  });
  for (Laid& l : misses) {
    if (ctx.deadline.Expired()) break;
    if (best.measured <= budget && l.eval.recompute_cost >= best.eval.recompute_cost) break;
    if (!Cheaper(l.eval.recompute_cost, cost_to_beat)) break;
    std::vector<Interval> intervals = PlannedIntervals(l.eval.model, l.eval.lifetimes);
    auto same = [&](const RepackLedger::Done& d) {
      return d.offsets == l.offsets && d.intervals == intervals;
    };
    auto done = std::find_if(ledger.done.begin(), ledger.done.end(), same);
    if (done == ledger.done.end()) {
      if (ledger.left <= 0) break;
      layout::RepackParams repack = params.fit.repack;
      repack.max_subproblems = std::min(repack.max_subproblems, ledger.left);
      layout::RepackResult r =
          layout::Repack(intervals, params.alignment, l.offsets, budget, repack, ctx.deadline);
      ledger.left -= r.subproblems;
      done = ledger.done.insert(ledger.done.end(),
                                {std::move(intervals), l.offsets, std::move(r.offsets), r.height});
    }
    if (done->height > budget) continue;
    l.offsets = done->repacked;
    l.actual = l.measured = done->height;
    l.repacked = true;
    best = std::move(l);
    break;
  }
}

// fit.refine_retries: a retry at target `fitted` laid out within the budget after one at
// `missed` did not. A schedule's arena is not monotone in its target and the retries step down
// by a fraction of the excess, so the targets between are bisected, each run from the greedy's
// schedule at the miss, and best becomes the cheapest fit (Better).
void RefineTarget(const Context& ctx, Bytes budget, const RematParams& params, const Preset& preset,
                  bool is_best, const Shared& shared, Bytes missed, Bytes fitted,
                  const Schedule& greedy_at_miss, Laid& best, std::vector<Laid>& misses) {
  for (int k = 0; k < params.fit.refine_retries && missed - fitted > 1 && !ctx.deadline.Expired();
       ++k) {
    const Bytes mid = fitted + (missed - fitted) / 2;
    Schedule greedy_state = greedy_at_miss;
    const Deadline methods = MethodsDeadline(ctx, params);
    Call call{ctx, params, greedy_state, shared, !is_best, budget, methods};
    Laid l = LayOutSchedule(ctx, RunPreset(call, preset, mid), mid, budget, params, shared.memo);
    (l.measured <= budget ? fitted : missed) = mid;
    if (RepackMay(l, budget, params)) misses.push_back(l);
    if (Better(l, best, budget)) best = std::move(l);
  }
}

// The target after a miss at `target` by a schedule of theoretical peak `theoretical` whose
// arena is `actual`: below that peak (a schedule that met the old target with room to spare
// would otherwise come back unchanged), by `step` of the arena's excess, at least a byte.
Bytes NextTarget(Bytes target, Bytes theoretical, Bytes actual, Bytes budget, double step) {
  const auto excess = static_cast<Bytes>(step * static_cast<double>(actual - budget));
  return std::min(target, theoretical) - std::max<Bytes>(1, excess);
}

// Where the first attempt missed the budget: what each descent of fit.retry_steps starts from.
struct Opening {
  Bytes theoretical = 0;  // the first schedule's theoretical peak
  Bytes actual = 0;       // and its arena
  Schedule greedy_state;  // the greedy's schedule after it
};

// One descent of the fit loop's retries, at one step.
struct Descent {
  std::optional<Bytes> missed_at;  // the lowest target that missed
  Schedule greedy_at_miss;         // the greedy's schedule after it
  Bytes target = 0;                // the last target tried
  bool fitted = false;             // its schedule fit the budget
};

// Attempts `first` to fit.retries of one descent from `target`, each at `step` below the last,
// until one fits; best becomes the better plan (Better) and misses collects the layouts
// repacking may rescue. opening (first attempt only): set where that attempt missed.
Descent Descend(const Context& ctx, Bytes budget, const RematParams& params, const Preset& preset,
                bool is_best, Shared shared, double step, int first, Descent d,
                Schedule& greedy_state, std::optional<Laid>& best, std::vector<Laid>& misses,
                std::optional<Opening>* opening) {
  for (int attempt = first; attempt <= params.fit.retries; ++attempt) {
    const Deadline methods = MethodsDeadline(ctx, params);
    Call call{ctx, params, greedy_state, shared, !is_best, budget, methods};
    MethodResult r = RunPreset(call, preset, d.target);
    shared.greedy = nullptr;
    const Bytes reached = r.peak;
    Laid l = LayOutSchedule(ctx, std::move(r), d.target, budget, params, shared.memo);
    const Bytes theoretical = l.eval.peak, actual = l.actual;
    d.fitted = l.measured <= budget;
    const bool dearer = !Cheaper(l.eval.recompute_cost, shared.cost_to_beat);
    if (RepackMay(l, budget, params)) misses.push_back(l);
    if (!best || Better(l, *best, budget)) best = std::move(l);
    // A lower target recomputes more as a rule, so past the plan to beat nothing is gained.
    if (d.fitted || reached > d.target || dearer || ctx.deadline.Expired()) break;
    d.missed_at = d.target;
    d.greedy_at_miss = greedy_state;
    if (opening != nullptr && attempt == 0) *opening = Opening{theoretical, actual, greedy_state};
    d.target = NextTarget(d.target, theoretical, actual, budget, step);
  }
  return d;
}

}  // namespace

// The fit loop for one preset: the methods meet a target on the theoretical peak; the layout
// may need more, so the target is lowered by the excess and the methods rerun (fit.retries,
// one descent per fit.retry_steps); where the first attempt missed, `best` tries its fallbacks.
// The plan's status and report.
RematResult Fit(const Context& ctx, Bytes budget, const RematParams& params, Schedule& greedy_state,
                Shared shared) {
  if (shared.memo == nullptr) throw std::logic_error("remat: a fit loop outside a plan's memo");
  if (params.fit.retry_steps.empty()) throw std::logic_error("remat: fit.retry_steps is empty");
  const auto started = std::chrono::steady_clock::now();
  const Preset preset = PresetOf(params);
  const bool is_best = params.method == "best";
  RematResult result;
  result.budget = budget;
  result.no_remat_peak = ctx.no_remat_peak;
  result.original_cost = ctx.original_cost;
  result.peak_lower_bound = ctx.peak_lower_bound;

  // best: no recomputation where an order alone fits; a method asked for by name runs as
  // itself, for comparisons.
  std::optional<Laid> best;
  if (is_best) best = WithoutRecomputation(ctx, budget, params);
  const bool reordered = best.has_value();
  std::optional<Opening> opening;
  // One descent at retry_steps[i]; its fit after a miss has the targets between bisected
  // (fit.refine_retries), and its misses are repacked (fit.repack) before the next descent
  // runs, so that a later descent's misses never take the repacking windows that rescued an
  // earlier one's: adding a step never makes a plan dearer.
  auto descend = [&](size_t i, int first, Descent d, Schedule& state, const Shared& s,
                     std::optional<Opening>* opened) {
    std::vector<Laid> misses;
    d = Descend(ctx, budget, params, preset, is_best, s, params.fit.retry_steps[i], first,
                std::move(d), state, best, misses, opened);
    if (d.missed_at && d.fitted)
      RefineTarget(ctx, budget, params, preset, is_best, s, *d.missed_at, d.target,
                   d.greedy_at_miss, *best, misses);
    RepackMisses(ctx, budget, params, misses, *best, shared.memo->repack, s.cost_to_beat);
  };
  if (!reordered) {
    Descent d;
    d.target = budget;
    descend(0, 0, std::move(d), greedy_state, shared, &opening);
  }
  for (size_t i = 1; opening && i < params.fit.retry_steps.size(); ++i) {
    if (ctx.deadline.Expired()) break;
    Shared later = shared;
    later.greedy = nullptr;  // the first attempt's only
    if (best->measured <= budget)
      later.cost_to_beat = std::min(shared.cost_to_beat, best->eval.recompute_cost);
    Descent d;
    d.missed_at = budget;
    d.greedy_at_miss = opening->greedy_state;
    d.target = NextTarget(budget, opening->theoretical, opening->actual, budget,
                          params.fit.retry_steps[i]);
    Schedule state = opening->greedy_state;
    descend(i, 1, std::move(d), state, later, nullptr);
  }
  if ((best->measured > budget || opening) && is_best && !params.fit.fallback_base_orders.empty() &&
      budget >= ctx.peak_lower_bound && !ctx.deadline.Expired()) {
    // The first attempt missed by the arena: the first fallback whose arena fits and that
    // costs less than the plan (where the retries found one) becomes the plan. After the
    // retries, so that they and their targets stay what they were; a fallback only replaces
    // a dearer plan.
    const double to_beat = best->measured <= budget
                               ? std::min(shared.cost_to_beat, best->eval.recompute_cost)
                               : shared.cost_to_beat;
    for (MethodResult& f : Fallbacks(ctx, budget, params, MethodsDeadline(ctx, params))) {
      if (ctx.deadline.Expired()) break;
      if (!Cheaper(f.recompute_cost, to_beat)) break;  // cheapest first
      Laid l = LayOutSchedule(ctx, std::move(f), budget, budget, params, shared.memo);
      if (l.measured > budget) continue;
      best = std::move(l);
      opening.reset();  // the plan is at the budget's own target
      break;
    }
  }
  // The loop's plan, pruned in the arena: the repeats its lower target or its repacking left
  // that the layout does not need. After the loop, so that its retries, their targets and
  // every comparison stay as they were; the loops that follow (fit.alone, start orders) are
  // held to the plan's cost as built (prune_saved), as theirs are compared before their prune.
  double prune_saved = 0;
  int pruned = 0;
  if (best->measured <= budget && !FitByTheoretical(params) && params.fit.prune.max_trials > 0 &&
      best->method.status != Status::kOptimal && !ctx.deadline.Expired()) {
    const double built = best->eval.recompute_cost;
    int windows = params.fit.prune.max_windows;
    pruned = PruneInArena(ctx.graph, budget, params, ctx.deadline, best->method, best->eval,
                          best->offsets, windows);
    if (pruned > 0) {
      best->actual = best->measured =
          LayoutHeight(PlannedIntervals(best->eval.model, best->eval.lifetimes), best->offsets);
      prune_saved = built - best->eval.recompute_cost;
    }
  }
  // What the exact method proved at a lower target, or of a schedule since pruned, is not
  // proved of the budget: the plan is then a feasible one, and the in-order bound (after the
  // plan) may prove more.
  if (best->target < budget || pruned > 0) {
    if (best->method.status == Status::kOptimalInOrder) best->method.status = Status::kFeasible;
    best->method.lower_bound = 0;
  }
  const MethodResult& m = best->method;
  result.fit_by = params.fit.by;
  result.feasible = best->measured <= budget;
  result.status = result.feasible ? m.status : Status::kInfeasible;
  if (result.feasible && m.status == Status::kInfeasible) result.status = Status::kFeasible;
  // What the exact method proved about a budget it could not meet stays visible.
  if (!result.feasible && !opening &&
      (m.status == Status::kInfeasibleProven || m.status == Status::kTimeLimit))
    result.status = m.status;
  result.timed_out = ctx.deadline.Expired();
  if (!result.feasible && result.timed_out && result.status == Status::kInfeasible)
    result.status = Status::kTimeLimit;
  if (!result.feasible && budget < result.peak_lower_bound)
    result.status = Status::kInfeasibleProven;
  result.solver = m.solver;
  result.order_lower_bound = result.original_cost > 0 ? m.lower_bound / result.original_cost : 0.0;
  result.method = m.method;
  result.repacked = best->repacked;
  result.start_order = m.order.empty() ? params.base_order : m.order;
  result.recompute_cost = best->eval.recompute_cost;
  result.prune_saved = prune_saved;
  result.compute_overhead =
      result.original_cost > 0 ? result.recompute_cost / result.original_cost : 0.0;
  result.schedule = m.schedule;
  result.seconds = SecondsSince(started);
  Rewritten& rw = best->eval.rewritten;
  result.plan = AssemblePlan(rw.graph, best->eval.model, rw.order, best->offsets, result.seconds);
  if (std::string problem = ValidatePlan(rw.graph, result.plan); !problem.empty())
    throw std::logic_error("remat produced an invalid plan: " + problem);
  if (std::string problem = CheckFaithful(rw.graph, &ctx.graph); !problem.empty())
    throw std::logic_error("remat produced an unfaithful rewrite: " + problem);
  result.rewritten = std::move(rw);
  return result;
}

}  // namespace roam::remat::detail
