#include "optimizer/optimizer.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "core/lower_bound.h"
#include "core/subgraph.h"
#include "core/types.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"
#include "layout/best.h"
#include "layout/layout.h"
#include "merge/merge.h"
#include "optimizer/pack_steps.h"
#include "optimizer/start.h"
#include "partition/partition.h"

namespace roam {
namespace {

// One result slot per leaf; each task writes only its own.
struct LeafSlot {
  std::vector<OpId> order;
  Bytes warm_peak = 0, peak = 0, forced = 0;
  bool sent = false, not_started = false, solver_error = false;
  bool work_limited = false;  // the solver stopped at its work limit, not the clock
  std::string error;          // the solver's message when solver_error
  ilp::ModelStatus status = ilp::ModelStatus::kError;
  Outcome outcome = Outcome::kHeuristic;
};

struct LayoutSlot {
  std::vector<Bytes> offsets;  // relative to the leaf's base
  bool solved = false;
  Outcome outcome = Outcome::kHeuristic;
  // Stopped at a limit without a proof; work_limited: the work limit, not the clock.
  bool limited = false, work_limited = false;
  bool not_started = false;  // the deadline or an interrupt came first: the greedy layout stays
};

class Run {
 public:
  Run(const Graph& graph, const OptimizerParams& params, const RunControl& control)
      : graph_(graph),
        params_(params),
        control_(control),
        deadline_(params.time_limit, control.stop, control.now, control.started) {
    if (params.alignment < 1) throw InputError("planner.alignment must be positive");
    if (params.threads < 0) throw InputError("planner.threads must not be negative");
    if (params.max_concurrency < 0) throw InputError("--max-concurrency must not be negative");
    if (params.partition.node_limit < 1)
      throw InputError("planner.partition.node_limit must be at least 1");
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads_ = params.threads > 0 ? params.threads : hw;
  }

  OptimizeResult Go() {
    model_ = BuildMemoryModel(graph_, params_.alignment);
    deps_ = BuildDependencies(graph_);
    start_ = opt::ComputeStartingPoint(graph_, model_, deps_, params_, deadline_,
                                       [&](const char* stage) { Report(stage, 0, 0); });
    result_.baselines.push_back({"pytorch", "program", "pytorch", start_.pytorch});
    result_.baselines.push_back(
        {"heuristic", start_.best_plan_order, start_.best_plan_layout, start_.best_plan.summary});
    result_.lower_bound = start_.forced.bound;
    result_.mode = params_.mode;
    result_.streams = params_.streams;
    if (!start_.forced.exact)
      result_.notes.push_back(
          "the certified bound's search was cut short (work or time): the "
          "bound is valid but may be below the largest forced residency");

    // Every later stage is optional: under an expired deadline the best baseline plan stands.
    std::optional<Plan> pipeline;
    if (!deadline_.Expired())
      pipeline = params_.mode == OptimizeMode::kModel ? WholeGraphMode() : RoamMode();
    Plan plan;
    if (pipeline) {
      plan = std::move(*pipeline);
      FinalLayout(plan);
      // ROAM mode plans one op per step and packs them into concurrent steps at its peak; so
      // does model mode when MODeL-MS kept its warm start (one op per step), which packing
      // only makes concurrent. Steps the ILP chose are its answer and stay.
      if (Multi() && NumSteps(plan.order, plan.steps) == graph_.num_ops()) {
        Report("pack steps", 0, 0);
        plan.steps.clear();
        plan = opt::PackSteps(graph_, model_, deps_, plan, params_.max_concurrency);
        pipeline_order_ += " + packed steps";
      }
      result_.pipeline = {std::string(ToString(params_.mode)), pipeline_order_, pipeline_layout_,
                          plan.summary};
    } else {
      result_.time_limit_hit = !deadline_.Stopped();
      result_.notes.push_back("the " + std::string(ToString(params_.mode)) +
                              " pipeline did not run to a plan before the " +
                              (deadline_.Stopped() ? "interrupt" : "time limit") +
                              "; the best baseline plan is returned");
      result_.pipeline = {std::string(ToString(params_.mode)), "not run", "not run",
                          start_.best_plan.summary};
      plan = start_.best_plan;
      result_.baseline_won = true;
    }
    const Plan& heuristic = start_.best_plan;
    if (pipeline && heuristic.summary.total_peak < plan.summary.total_peak) {
      // Never worse than the best baseline plan.
      result_.notes.push_back(
          "the " + std::string(ToString(params_.mode)) + " pipeline's plan (" +
          std::to_string(plan.summary.total_peak) + " B total) lost to the best baseline plan (" +
          std::to_string(heuristic.summary.total_peak) + " B), which is returned instead");
      plan = heuristic;
      result_.baseline_won = true;
    }
    if (result_.baseline_won) {
      result_.order_outcome = Outcome::kHeuristic;
      result_.layout_outcome = Outcome::kHeuristic;
    }
    // A proof beats every other label: the bound is met, or the layout has no fragmentation.
    if (plan.summary.theoretical_peak == start_.forced.bound)
      result_.order_outcome = Outcome::kOptimal;
    if (plan.summary.actual_peak == plan.summary.theoretical_peak)
      result_.layout_outcome = Outcome::kOptimal;
    result_.gap = plan.summary.theoretical_peak > 0
                      ? static_cast<double>(plan.summary.theoretical_peak - start_.forced.bound) /
                            static_cast<double>(plan.summary.theoretical_peak)
                      : 0.0;
    Report("validate", 0, 0);
    result_.seconds = deadline_.Elapsed();
    plan.summary.seconds = result_.seconds;
    if (std::string problem = ValidatePlan(graph_, plan); !problem.empty())
      throw std::logic_error("optimizer produced an invalid plan: " + problem);
    result_.plan = std::move(plan);
    result_.best_baseline = std::move(start_.best_plan);
    result_.interrupted = deadline_.Stopped();
    return std::move(result_);
  }

 private:
  double Elapsed() const { return deadline_.Elapsed(); }
  double Remaining() const { return deadline_.Remaining(); }
  bool Stopped() const { return deadline_.Stopped(); }
  bool Expired() const { return deadline_.Expired(); }
  // The order the pipeline starts from: the lowest-peak candidate.
  const opt::NamedOrder& Start() const { return start_.candidates[start_.start]; }
  void Report(const char* stage, int done, int total) const {
    if (control_.progress) control_.progress({done, total, Elapsed(), stage});
  }

  Plan PlanOf(std::vector<OpId> order, std::span<const Bytes> offsets,
              std::vector<Step> steps = {}) const {
    return AssemblePlan(graph_, model_, std::move(order), offsets, Elapsed(), std::move(steps));
  }
  bool Multi() const { return params_.streams == Streams::kMulti; }

  std::optional<Plan> WholeGraphMode() {
    opt::WholeGraphParams p;
    p.order_share = params_.order_share;
    p.time_limit_s = std::max(0.0, std::min(Remaining() - params_.solver_overshoot,
                                            params_.time_limit > 0 ? params_.time_limit : 1e9));
    // MODeL's order ILP stops at the first incumbent that meets the certified bound, and is
    // not built at all when the warm start already does.
    p.order_lower_bound = start_.forced.bound;
    // MODeL-MS: n steps, any number of independent ops in one (or at most max_concurrency).
    p.order.multi_stream = Multi();
    p.order.max_concurrency = params_.max_concurrency;
    p.order.solve.max_lp_work = p.layout.solve.max_lp_work = params_.whole_graph.max_lp_work;
    Report("whole-graph ILP", 0, 1);
    std::optional<opt::WholeGraphResult> solved =
        opt::OptimizeWholeGraphOnTime(graph_, model_, Start().order, p, deadline_);
    if (!solved) {
      result_.notes.push_back("the whole-graph ILPs were still building or solving at the " +
                              std::string(Stopped() ? "interrupt" : "time limit") +
                              "; they were left to stop");
      return std::nullopt;
    }
    opt::WholeGraphResult& r = *solved;
    result_.order_outcome = r.order_part.outcome;
    result_.layout_outcome = r.layout_part.outcome;
    // A work limit is no deadline: only a part the clock stopped hit the time limit; one a
    // work or size limit stopped is said in the notes.
    for (const auto& [part, name] :
         {std::pair{&r.order_part, "order"}, {&r.layout_part, "layout"}}) {
      if (part->status != ilp::ModelStatus::kFeasibleTimeLimit) continue;
      if (!part->work_limited) {
        result_.time_limit_hit = true;
        continue;
      }
      result_.notes.push_back(std::string("the whole-graph ") + name +
                              " ILP stopped at a work or size limit, not the clock, so this "
                              "part is the same on any machine: " +
                              part->note);
    }
    pipeline_order_ =
        std::string(Multi() ? "multi-stream " : "") + "order ILP from " + Start().name;
    pipeline_layout_ = "layout ILP";
    Report("whole-graph ILP", 1, 1);
    return PlanOf(std::move(r.order), r.offsets, std::move(r.steps));
  }

  // The search engine on every planned storage under the plan's order, warm-started from its
  // layout, when the layout is above max-live. Keeps the plan's layout unless it is beaten.
  void FinalLayout(Plan& plan) {
    if (!params_.final_layout.enabled || plan.summary.actual_peak == plan.summary.theoretical_peak)
      return;
    // A pass the deadline leaves no time for is one the clock stopped: checked before the
    // stage is reported and again after (a progress callback may be where the time goes).
    if (Expired()) {
      result_.time_limit_hit = true;
      return;
    }
    Report("whole-graph layout", 0, 0);
    // The search looks at the clock at every node, so it needs no overshoot reserve: it gets
    // what is left of the run (GLPK's reserve here once cost ViT-B/16 its last pass under
    // every short limit).
    const double limit = std::min(params_.final_layout.time_limit, Remaining());
    if (limit <= 0.01) {
      result_.time_limit_hit = true;
      return;
    }
    const auto intervals =
        PlannedIntervals(model_, ComputeLifetimes(graph_, model_, plan.order, plan.steps));
    std::vector<Bytes> offsets;
    for (const Buffer& b : plan.buffers) offsets.push_back(b.offset);
    layout::BestLayout best(intervals, params_.alignment);
    best.Offer("plan", std::move(offsets));
    const Bytes start = best.height();
    layout::LayoutParams p;
    p.time_limit_s = limit;
    p.max_nodes = params_.final_layout.max_nodes;
    p.max_work = params_.final_layout.max_work;
    p.stop = control_.stop;
    p.search = params_.final_layout.search;
    const layout::LayoutResult r = best.Search(p);
    if (r.status == layout::LayoutStatus::kTimeLimit && !r.work_limited)
      result_.time_limit_hit = true;
    if (best.height() >= start) return;
    pipeline_layout_ += " + whole-graph search";
    result_.layout_outcome = OutcomeOf(r.status, r.height, start);
    plan = PlanOf(std::move(plan.order), best.offsets(), std::move(plan.steps));
  }

  // The lowest-peak tree over the weight-update placements tried before the deadline; none
  // when it struck before the first.
  std::optional<SubgraphTree> BestPartition() {
    std::vector<UpdatePlacement> placements = {params_.partition.update_placement};
    if (params_.best_update_placement)
      placements = {UpdatePlacement::kScheduled, UpdatePlacement::kWhenReady,
                    UpdatePlacement::kAtEnd, UpdatePlacement::kSplit};
    std::optional<SubgraphTree> best;
    Bytes best_peak = std::numeric_limits<Bytes>::max();
    for (UpdatePlacement placement : placements) {
      if (Expired()) break;
      PartitionParams p = params_.partition;
      p.update_placement = placement;
      SubgraphTree tree = PartitionGraph(graph_, model_, Start().order, p);
      const Bytes peak = TheoreticalPeak(graph_, model_, tree.order);
      if (peak < best_peak) {
        best_peak = peak;
        best = std::move(tree);
      }
    }
    return best;
  }

  // The leaf's ops in the order `positions` gives them (a restriction of a full order).
  static std::vector<OpId> Restrict(const std::vector<OpId>& ops,
                                    const std::vector<int>& position) {
    std::vector<OpId> r = ops;
    std::sort(r.begin(), r.end(), [&](OpId a, OpId b) { return position[U(a)] < position[U(b)]; });
    return r;
  }

  void SolveLeafOrder(const Leaf& leaf, LeafSlot& slot) const {
    if (!slot.sent) return;
    const double remaining = Remaining() - params_.solver_overshoot;
    if (Stopped() || remaining <= 0.05) {
      slot.sent = false;
      slot.not_started = true;
      return;
    }
    ilp::OrderIlpParams p;
    p.solve.time_limit_s = std::min(params_.leaf_order.time_limit, remaining);
    p.solve.max_total_lp_iterations = params_.leaf_order.max_lp_iterations;
    p.solve.max_lp_work = params_.leaf_order.max_lp_work;
    p.contract = params_.leaf_order.contract;
    p.symmetry_breaking = params_.leaf_order.symmetry_breaking;
    p.max_nonzeros = params_.leaf_order.max_nonzeros;
    p.solve.stop = control_.stop;
    ilp::OrderIlpResult r =
        control_.leaf_order_solver
            ? control_.leaf_order_solver(graph_, model_, deps_, leaf, slot.order, p)
            : ilp::SolveOrderIlp(graph_, model_, deps_, leaf, slot.order, p);
    slot.status = r.status;
    slot.work_limited = r.work_limited;
    if (r.call == ilp::CallOutcome::kError || r.status == ilp::ModelStatus::kError) {
      // Whatever a failed call returned is not trusted: the leaf keeps its warm start.
      slot.solver_error = true;
      slot.error = r.note;
      slot.outcome = Outcome::kHeuristic;
      return;
    }
    // Time-limited only when the solver lowered the peak: a different order at the same peak
    // is no improvement (docs/optimizer.md, "Labels").
    slot.outcome = OutcomeOf(r.status, r.peak, slot.peak);
    if (r.peak < slot.peak) {
      slot.order = std::move(r.order);
      slot.peak = r.peak;
    }
  }

  // Runs body(i) for i in [0, n) as one task each on an arena of threads_ (this thread is
  // one of them), then waits. Progress is reported as tasks finish, one report at a time.
  template <typename Body>
  void FanOut(const char* stage, int n, const Body& body) {
    std::mutex report;  // one progress report at a time
    int done = 0;
    Report(stage, 0, n);
    // oneTBB's own hand-over of tasks is invisible to ThreadSanitizer (Debian's libtbb is not
    // instrumented), so the slots' publication to the workers and their collection afterwards
    // go through these two atomics, release before the fan-out and acquire after it.
    std::atomic<int> published{0}, finished{0};
    published.store(1, std::memory_order_release);
    tbb::task_arena arena(threads_);
    arena.execute([&] {
      // One index per task (grain 1, simple partitioner): leaves differ wildly in cost.
      tbb::parallel_for(
          tbb::blocked_range<int>(0, n, 1),
          [&](const tbb::blocked_range<int>& range) {
            (void)published.load(std::memory_order_acquire);
            for (int i = range.begin(); i < range.end(); ++i) {
              body(i);
              std::lock_guard<std::mutex> lock(report);
              Report(stage, ++done, n);
            }
            finished.fetch_add(1, std::memory_order_acq_rel);
          },
          tbb::simple_partitioner());
    });
    (void)finished.load(std::memory_order_acquire);
  }

  std::optional<Plan> RoamMode() {
    Report("partition", 0, 0);
    std::optional<SubgraphTree> best_tree = BestPartition();
    if (!best_tree) return std::nullopt;
    SubgraphTree tree = std::move(*best_tree);
    const Bytes input_peak = Start().peak;
    const Bytes tree_peak = TheoreticalPeak(graph_, model_, tree.order);
    if (tree_peak > input_peak) {
      result_.notes.push_back("the subgraph tree's order peaks at " + std::to_string(tree_peak) +
                              " B, above its input order's " + std::to_string(input_peak) +
                              " B; the input order is cut into windows instead");
      tree = WindowPartition(graph_, model_, Start().order, params_.partition);
    }

    // Warm starts: the best of the partition's sub-order and every baseline order restricted
    // to the leaf (a restriction of a topological order is topological for the leaf).
    std::vector<std::vector<int>> positions;
    for (const opt::NamedOrder& candidate : start_.candidates) {
      std::vector<int> pos(U(graph_.num_ops()));
      for (size_t s = 0; s < candidate.order.size(); ++s)
        pos[U(candidate.order[s])] = static_cast<int>(s);
      positions.push_back(std::move(pos));
    }
    const int nl = static_cast<int>(tree.leaves.size());
    std::vector<LeafSlot> slots(U(nl));
    const bool order_proven = input_peak == start_.forced.bound;
    for (int l = 0; l < nl; ++l) {
      const Leaf& leaf = tree.leaves[U(l)];
      LeafSlot& slot = slots[U(l)];
      slot.order = leaf.ops;
      slot.warm_peak = SubgraphPeak(graph_, model_, leaf, leaf.ops);
      for (const auto& pos : positions) {
        std::vector<OpId> r = Restrict(leaf.ops, pos);
        const Bytes peak = SubgraphPeak(graph_, model_, leaf, r);
        if (peak < slot.warm_peak) {
          slot.warm_peak = peak;
          slot.order = std::move(r);
        }
      }
      slot.peak = slot.warm_peak;
    }
    LeafForcedResidency(tree, slots);
    for (int l = 0; l < nl; ++l) {
      const Leaf& leaf = tree.leaves[U(l)];
      LeafSlot& slot = slots[U(l)];
      const bool can_gain = slot.warm_peak > start_.forced.bound && slot.warm_peak > slot.forced;
      slot.sent = params_.leaf_order.enabled && leaf.ops.size() > 1 &&
                  (!params_.bound_shortcut || (!order_proven && can_gain));
      if (leaf.ops.size() <= 1)
        ++result_.leaves.single_op;
      else if (params_.leaf_order.enabled && !slot.sent)
        ++result_.leaves.skipped_by_bound;
    }
    FanOut("leaf orders", nl, [&](int l) { SolveLeafOrder(tree.leaves[U(l)], slots[U(l)]); });

    LeafCounts& counts = result_.leaves;
    counts.total = nl;
    std::vector<std::vector<OpId>> orders;
    Bytes peak = 0;
    for (const LeafSlot& slot : slots) {
      orders.push_back(slot.order);
      peak = std::max(peak, slot.peak);
      if (slot.not_started) ++counts.not_started;
      if (!slot.sent) continue;
      ++counts.sent_to_solver;
      if (slot.solver_error) ++counts.solver_errors;
      if (slot.outcome == Outcome::kOptimal) ++counts.proved_optimal;
      if (ilp::StoppedAtALimit(slot.status))
        ++(slot.work_limited ? counts.work_limited : counts.time_limited);
    }
    if (params_.leaf_order.enabled &&
        counts.sent_to_solver + counts.skipped_by_bound + counts.not_started + counts.single_op !=
            counts.total)
      throw std::logic_error("optimizer: the leaf counts do not add up to the leaves");
    for (int l = 0; l < nl; ++l)
      if (slots[U(l)].solver_error)
        result_.notes.push_back("leaf " + std::to_string(l) + ": the order solver failed (" +
                                (slots[U(l)].error.empty() ? "no message" : slots[U(l)].error) +
                                "); its warm-start order is kept");
    std::vector<OpId> order = ConcatenateOrders(orders, graph_.num_ops());
    // ROAM eq 1: the whole order's peak is the largest leaf peak with boundary memory.
    if (TheoreticalPeak(graph_, model_, order) != peak)
      throw std::logic_error("optimizer: the leaves' peaks do not add up to the order's peak");

    // The order's label: the leaves that hold the peak decide it. Their proofs hold within the
    // partition only, so the fold starts from heuristic (the bound alone proves the whole).
    bool all_peak_optimal = true;
    result_.order_outcome = Outcome::kHeuristic;
    for (const LeafSlot& slot : slots) {
      if (slot.peak != peak) continue;
      all_peak_optimal = all_peak_optimal && slot.outcome == Outcome::kOptimal;
      result_.order_outcome = Worse(result_.order_outcome, slot.outcome);
    }
    result_.peak_leaves_optimal = all_peak_optimal && peak > start_.forced.bound;
    if (result_.peak_leaves_optimal)
      result_.notes.push_back(
          "the leaves holding the peak are proved optimal within the "
          "partition; the gap to the certified bound remains");
    pipeline_order_ = "leaf order ILPs from " + Start().name;

    if (counts.time_limited > 0 || counts.not_started > 0) result_.time_limit_hit = true;
    std::vector<Bytes> offsets = Layout(tree, order);
    return PlanOf(std::move(order), offsets);
  }

  // Per leaf, the largest forced residency of its ops, where it matters: a leaf whose warm
  // start is above the bound goes to the solver only when it is also above that (no order of
  // the leaf beats it). An op's forced bytes are at most its upper bound, so only ops whose
  // upper bound reaches their leaf's warm-start peak need evaluating.
  void LeafForcedResidency(const SubgraphTree& tree, std::vector<LeafSlot>& slots) {
    std::vector<OpId> needed;
    for (size_t l = 0; l < slots.size(); ++l) {
      if (slots[l].warm_peak <= start_.forced.bound) continue;
      for (OpId op : tree.leaves[l].ops)
        if (!start_.forced.evaluated[U(op)] && start_.forced.upper[U(op)] >= slots[l].warm_peak)
          needed.push_back(op);
    }
    EvaluateForced(graph_, model_, deps_, needed, start_.forced);
    for (size_t l = 0; l < slots.size(); ++l)
      for (OpId op : tree.leaves[l].ops)
        slots[l].forced = std::max(slots[l].forced, start_.forced.per_op[U(op)]);
  }

  std::vector<Bytes> Layout(const SubgraphTree& tree, const std::vector<OpId>& order) {
    const auto intervals = PlannedIntervals(model_, ComputeLifetimes(graph_, model_, order));
    std::vector<int> interval_of(model_.storages.size(), -1);
    for (size_t i = 0; i < model_.planned.size(); ++i)
      interval_of[U(model_.planned[i])] = static_cast<int>(i);

    const int nl = static_cast<int>(tree.leaves.size());
    std::vector<LeafLayout> leaves(U(nl));
    for (int l = 0; l < nl; ++l) {
      const Leaf& leaf = tree.leaves[U(l)];
      LeafLayout& out = leaves[U(l)];
      for (StorageId sid : leaf.layout) {
        out.buffers.push_back(interval_of[U(sid)]);
        // An activation (ROAM eq 9: pinned at the bottom, stacked): made by the forward pass
        // in an earlier leaf and freed by a later pass. A forward temporary that only crosses
        // into the next forward leaf is not one: pinned under the long-lived activations
        // created as it dies, it would leave its hole under them for the whole backward.
        const OpId creator = graph_.tensors[U(model_.storages[U(sid)].root)].producer;
        const OpId freer = order[U(intervals[U(interval_of[U(sid)])].end)];
        out.activation.push_back(tree.leaf_of_op[U(creator)] != l &&
                                 tree.phases.phase[U(creator)] == Phase::kForward &&
                                 tree.phases.phase[U(freer)] != Phase::kForward);
      }
    }
    std::vector<LayoutSlot> slots(U(nl));
    auto solve = [&](int l) {
      LeafLayout& leaf = leaves[U(l)];
      std::vector<Interval> local;
      std::vector<int> pinned;
      for (size_t k = 0; k < leaf.buffers.size(); ++k) {
        local.push_back(intervals[U(leaf.buffers[k])]);
        if (leaf.activation[k]) pinned.push_back(static_cast<int>(k));
      }
      pinned = ilp::RoamPinnedOrder(local, pinned);
      std::vector<Bytes> greedy = ilp::GreedyLayout(local, params_.alignment, pinned);
      LayoutSlot& slot = slots[U(l)];
      slot.offsets = greedy;
      // GLPK needs its overshoot reserve; the search looks at the clock at every node.
      const bool ilp = params_.leaf_layout.engine == LayoutEngine::kIlp;
      const double remaining = Remaining() - (ilp ? params_.solver_overshoot : 0.0);
      if (!params_.leaf_layout.enabled || local.size() < 2 ||
          static_cast<int>(local.size()) > params_.leaf_layout.max_storages ||
          LayoutHeight(local, greedy) == MaxLiveBytes(local))
        return;
      if (Expired() || remaining <= 0.01) {
        slot.not_started = true;
        return;
      }
      const double limit = std::min(params_.leaf_layout.time_limit, remaining);
      slot.solved = true;
      if (ilp) {
        ilp::LayoutIlpParams p;
        p.pinned_bottom = pinned;
        p.solve.time_limit_s = limit;
        p.solve.max_lp_work = params_.leaf_layout.max_lp_work;
        p.solve.stop = control_.stop;
        ilp::LayoutIlpResult r =
            ilp::SolveLayoutIlp(local, params_.alignment, p, std::span<const Bytes>(greedy));
        slot.outcome = OutcomeOf(r.status, r.height, LayoutHeight(local, greedy));
        slot.limited = ilp::StoppedAtALimit(r.status);
        slot.work_limited = r.work_limited;
        if (r.height <= LayoutHeight(local, greedy)) slot.offsets = std::move(r.offsets);
        return;
      }
      layout::LayoutParams p;
      p.pinned_bottom = pinned;
      p.time_limit_s = limit;
      p.max_nodes = params_.leaf_layout.max_nodes;
      p.stop = control_.stop;
      p.search = params_.leaf_layout.search;
      layout::LayoutResult r =
          layout::SolveLayout(local, params_.alignment, p, std::span<const Bytes>(greedy));
      slot.outcome = OutcomeOf(r.status, r.height, LayoutHeight(local, greedy));
      slot.limited = r.status == layout::LayoutStatus::kTimeLimit;
      slot.work_limited = r.work_limited;
      if (r.height < LayoutHeight(local, greedy)) slot.offsets = std::move(r.offsets);
    };
    FanOut("leaf layouts", nl, solve);
    // As for the order: a leaf's proof is not the whole layout's.
    Outcome leaves_outcome = Outcome::kHeuristic;
    LeafCounts& counts = result_.leaves;
    int not_started = 0;
    for (int l = 0; l < nl; ++l) {
      const LayoutSlot& slot = slots[U(l)];
      leaves[U(l)].offsets = std::move(slots[U(l)].offsets);
      leaves_outcome = Worse(leaves_outcome, slot.outcome);
      if (slot.solved) ++counts.layouts_solved;
      if (slot.solved && slot.outcome == Outcome::kOptimal) ++counts.layouts_proved_optimal;
      if (slot.limited)
        ++(slot.work_limited ? counts.layouts_work_limited : counts.layouts_time_limited);
      if (slot.not_started) ++not_started;
    }
    if (not_started > 0)
      result_.notes.push_back(std::to_string(not_started) +
                              " leaf layouts not started (time or interrupt): their greedy "
                              "layouts are kept");
    if (counts.layouts_time_limited > 0 || not_started > 0) result_.time_limit_hit = true;
    Report("merge", 0, 0);
    MergeParams merge = params_.merge;
    merge.search_time_limit_s = std::min(merge.search_time_limit_s, std::max(0.001, Remaining()));
    merge.stop = control_.stop;
    merge.search_reassignment = merge.search_reassignment && !Expired();
    MergeResult merged = MergeLayouts(intervals, leaves, params_.alignment, merge);
    merge_stats_ = merged.stats;

    // The merge against the greedy layouts on the same lifetimes: keep the lowest.
    layout::BestLayout best(intervals, params_.alignment);
    best.Offer("leaf layouts merged", std::move(merged.offsets));
    best.OfferBestFit();
    best.OfferLlfb();
    pipeline_layout_ = best.name();
    result_.layout_outcome =
        best.name() == "leaf layouts merged" ? leaves_outcome : Outcome::kHeuristic;
    if (merge_stats_.conflicts > 0)
      result_.notes.push_back("merge: " + std::to_string(merge_stats_.conflicts) +
                              " address conflicts between leaves, " +
                              std::to_string(merge_stats_.reassigned) + " temporaries reassigned");
    return best.TakeOffsets();
  }

  const Graph& graph_;
  const OptimizerParams& params_;
  const RunControl& control_;
  Deadline deadline_;
  int threads_ = 1;
  MemoryModel model_;
  Dependencies deps_;
  opt::StartingPoint start_;
  std::string pipeline_order_, pipeline_layout_;
  MergeStats merge_stats_;
  OptimizeResult result_;
};

}  // namespace

OptimizeResult Optimize(const Graph& graph, const OptimizerParams& params,
                        const RunControl& control) {
  return Run(graph, params, control).Go();
}

}  // namespace roam
