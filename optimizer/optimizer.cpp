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

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/error.h"
#include "core/lower_bound.h"
#include "core/subgraph.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"
#include "layout/layout.h"
#include "merge/merge.h"
#include "partition/partition.h"

namespace roam {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kGreedyOrders = {"lescea", "xla-list", "xla-dfs"};

// One result slot per leaf; each task writes only its own.
struct LeafSlot {
  std::vector<OpId> order;
  Bytes warm_peak = 0, peak = 0, forced = 0;
  bool sent = false, not_started = false, solver_error = false;
  std::string error;  // the solver's message when solver_error
  ilp::ModelStatus status = ilp::ModelStatus::kError;
  PartOutcome outcome = PartOutcome::kHeuristic;
};

struct LayoutSlot {
  std::vector<Bytes> offsets;  // relative to the leaf's base
  bool solved = false;
  PartOutcome outcome = PartOutcome::kHeuristic;
};

class Run {
 public:
  Run(const Graph& graph, const OptimizerParams& params, const RunControl& control)
      : graph_(graph), params_(params), control_(control), started_(Clock::now()) {
    if (params.alignment < 1) throw InputError("planner.alignment must be positive");
    if (params.threads < 0) throw InputError("planner.threads must not be negative");
    if (params.partition.node_limit < 1)
      throw InputError("planner.partition.node_limit must be at least 1");
    deadline_ = params.time_limit > 0
                    ? started_ + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(params.time_limit))
                    : Clock::time_point::max();
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads_ = params.threads > 0 ? params.threads : hw;
  }

  OptimizeResult Go() {
    model_ = BuildMemoryModel(graph_, params_.alignment);
    deps_ = BuildDependencies(graph_);
    Baselines();
    forced_ = CertifiedLowerBound(graph_, model_, deps_);
    result_.lower_bound = forced_.bound;
    result_.mode = params_.mode;

    Plan plan = params_.mode == OptimizeMode::kModel ? WholeGraphMode() : RoamMode();
    FinalLayout(plan);
    result_.pipeline = {std::string(ToString(params_.mode)), pipeline_order_, pipeline_layout_,
                        plan.summary};

    // Never worse than the best baseline plan.
    if (heuristic_plan_.summary.total_peak < plan.summary.total_peak) {
      result_.notes.push_back(
          "the " + std::string(ToString(params_.mode)) + " pipeline's plan (" +
          std::to_string(plan.summary.total_peak) + " B total) lost to the best baseline plan (" +
          std::to_string(heuristic_plan_.summary.total_peak) + " B), which is returned instead");
      plan = heuristic_plan_;
      result_.baseline_won = true;
      result_.order_outcome = PartOutcome::kHeuristic;
      result_.layout_outcome = PartOutcome::kHeuristic;
    }
    // A proof beats every other label: the bound is met, or the layout has no fragmentation.
    if (plan.summary.theoretical_peak == forced_.bound)
      result_.order_outcome = PartOutcome::kOptimal;
    if (plan.summary.actual_peak == plan.summary.theoretical_peak)
      result_.layout_outcome = PartOutcome::kOptimal;
    result_.gap = plan.summary.theoretical_peak > 0
                      ? static_cast<double>(plan.summary.theoretical_peak - forced_.bound) /
                            static_cast<double>(plan.summary.theoretical_peak)
                      : 0.0;
    result_.seconds = Elapsed();
    plan.summary.seconds = result_.seconds;
    if (std::string problem = ValidatePlan(graph_, plan); !problem.empty())
      throw std::logic_error("optimizer produced an invalid plan: " + problem);
    result_.plan = std::move(plan);
    result_.interrupted = Stopped();
    return std::move(result_);
  }

 private:
  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  double Remaining() const {
    if (deadline_ == Clock::time_point::max()) return std::numeric_limits<double>::infinity();
    return std::chrono::duration<double>(deadline_ - Clock::now()).count();
  }
  bool Stopped() const { return control_.stop != nullptr && control_.stop->load(); }
  void Report(const char* stage, int done, int total) const {
    if (control_.progress) control_.progress({done, total, Elapsed(), stage});
  }

  Plan PlanOf(std::vector<OpId> order, std::span<const Bytes> offsets) const {
    return AssemblePlan(graph_, model_, std::move(order), offsets, Elapsed());
  }

  void Baselines() {
    Report("baselines", 0, 0);
    program_ = graph_.program_order;
    std::vector<Bytes> pytorch = PlaceBuffers(
        "pytorch", PlannedIntervals(model_, ComputeLifetimes(graph_, model_, program_)),
        params_.alignment);
    result_.baselines.push_back(
        {"pytorch", "program", "pytorch", PlanOf(program_, pytorch).summary});

    // The best order of all: program and the greedy schedulers (heuristic = best greedy).
    candidates_.push_back({"program", program_});
    for (const std::string& name : kGreedyOrders)
      candidates_.push_back({name, ScheduleOrder(name, graph_, model_)});
    auto best_of = [&](size_t count) {
      size_t best = 0;
      Bytes best_peak = std::numeric_limits<Bytes>::max();
      for (size_t c = 0; c < count; ++c)
        if (const Bytes peak = TheoreticalPeak(graph_, model_, candidates_[c].second);
            peak < best_peak) {
          best_peak = peak;
          best = c;
        }
      return best;
    };
    // The best baseline plan: every baseline order with best-fit and with llfb, the lowest
    // actual peak (the lower theoretical peak on ties).
    std::string baseline_name;
    for (const auto& [name, order] : candidates_) {
      const auto intervals = PlannedIntervals(model_, ComputeLifetimes(graph_, model_, order));
      for (const char* layout : {"best-fit", "llfb"}) {
        Plan p = PlanOf(order, PlaceBuffers(layout, intervals, params_.alignment));
        const auto key = [](const Plan& x) {
          return std::pair(x.summary.actual_peak, x.summary.theoretical_peak);
        };
        if (heuristic_plan_.order.empty() || key(p) < key(heuristic_plan_)) {
          heuristic_plan_ = std::move(p);
          heuristic_layout_ = layout;
          baseline_name = name;
        }
      }
    }

    // The pipeline may also start from each order with the weight updates' temporary-making
    // tails moved after the activation peak (partition/partition.h, UpdatePlacement::kSplit):
    // nothing depends on a tail but its own ops, so the order stays topological.
    if (params_.defer_update_tails) {
      PartitionParams split = params_.partition;
      split.update_placement = UpdatePlacement::kSplit;
      std::vector<char> is_tail(U(graph_.num_ops()), 0);
      for (const WeightUpdateBranch& b : PartitionGraph(graph_, model_, program_, split).branches)
        if (b.tail)
          for (OpId op : b.ops) is_tail[U(op)] = 1;
      const size_t count = candidates_.size();
      for (size_t c = 0; c < count; ++c) {
        std::vector<OpId> order;
        for (int pass = 0; pass < 2; ++pass)
          for (OpId op : candidates_[c].second)
            if (is_tail[U(op)] == pass) order.push_back(op);
        if (order != candidates_[c].second)
          candidates_.push_back({candidates_[c].first + "+deferred-tails", std::move(order)});
      }
    }
    const size_t start = best_of(candidates_.size());
    best_order_ = candidates_[start].second;
    best_order_name_ = candidates_[start].first;
    result_.baselines.push_back(
        {"heuristic", baseline_name, heuristic_layout_, heuristic_plan_.summary});
  }

  Plan WholeGraphMode() {
    opt::WholeGraphParams p;
    p.time_limit_s = std::max(0.0, std::min(Remaining() - params_.solver_overshoot,
                                            params_.time_limit > 0 ? params_.time_limit : 1e9));
    p.order.solve.stop = control_.stop;
    p.layout.solve.stop = control_.stop;
    Report("whole-graph ILP", 0, 1);
    opt::WholeGraphResult r = opt::OptimizeWholeGraph(graph_, model_, best_order_, p);
    result_.order_outcome = r.order_part.outcome;
    result_.layout_outcome = r.layout_part.outcome;
    result_.time_limit_hit = r.order_part.status == ilp::ModelStatus::kFeasibleTimeLimit ||
                             r.layout_part.status == ilp::ModelStatus::kFeasibleTimeLimit;
    pipeline_order_ = "order ILP from " + best_order_name_;
    pipeline_layout_ = "layout ILP";
    Report("whole-graph ILP", 1, 1);
    return PlanOf(std::move(r.order), r.offsets);
  }

  // The search engine on every planned storage under the plan's order, warm-started from its
  // layout, when the layout is above max-live. Keeps the plan's layout unless it is beaten.
  void FinalLayout(Plan& plan) {
    if (!params_.final_layout.enabled || Stopped() ||
        plan.summary.actual_peak == plan.summary.theoretical_peak)
      return;
    const double limit =
        std::min(params_.final_layout.time_limit, Remaining() - params_.solver_overshoot);
    if (limit <= 0.05) return;
    const auto intervals = PlannedIntervals(model_, ComputeLifetimes(graph_, model_, plan.order));
    std::vector<Bytes> offsets;
    for (const Buffer& b : plan.buffers) offsets.push_back(b.offset);
    Report("whole-graph layout", 0, 0);
    layout::LayoutParams p;
    p.time_limit_s = limit;
    p.search.bottom_left = params_.final_layout.bottom_left;
    layout::LayoutResult r =
        layout::SolveLayout(intervals, params_.alignment, p, std::span<const Bytes>(offsets));
    if (r.height >= LayoutHeight(intervals, offsets)) return;
    pipeline_layout_ += " + whole-graph search";
    result_.layout_outcome = r.status == layout::LayoutStatus::kOptimal ? PartOutcome::kOptimal
                                                                        : PartOutcome::kTimeLimited;
    plan = PlanOf(std::move(plan.order), r.offsets);
  }

  SubgraphTree BestPartition() {
    std::vector<UpdatePlacement> placements = {params_.partition.update_placement};
    if (params_.best_update_placement)
      placements = {UpdatePlacement::kScheduled, UpdatePlacement::kWhenReady,
                    UpdatePlacement::kAtEnd, UpdatePlacement::kSplit};
    SubgraphTree best;
    Bytes best_peak = std::numeric_limits<Bytes>::max();
    for (UpdatePlacement placement : placements) {
      PartitionParams p = params_.partition;
      p.update_placement = placement;
      SubgraphTree tree = PartitionGraph(graph_, model_, best_order_, p);
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
    p.solve.stop = control_.stop;
    ilp::OrderIlpResult r =
        control_.leaf_order_solver
            ? control_.leaf_order_solver(graph_, model_, deps_, leaf, slot.order, p)
            : ilp::SolveOrderIlp(graph_, model_, deps_, leaf, slot.order, p);
    slot.status = r.status;
    if (r.call == ilp::CallOutcome::kError || r.status == ilp::ModelStatus::kError) {
      // Whatever a failed call returned is not trusted: the leaf keeps its warm start.
      slot.solver_error = true;
      slot.error = r.note;
      slot.outcome = PartOutcome::kHeuristic;
      return;
    }
    if (r.peak < slot.peak) {
      slot.order = std::move(r.order);
      slot.peak = r.peak;
    }
    slot.outcome = r.status == ilp::ModelStatus::kOptimal ? PartOutcome::kOptimal
                   : r.from_warm_start || !r.model_built  ? PartOutcome::kHeuristic
                                                          : PartOutcome::kTimeLimited;
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

  Plan RoamMode() {
    Report("partition", 0, 0);
    SubgraphTree tree = BestPartition();
    const Bytes input_peak = TheoreticalPeak(graph_, model_, best_order_);
    const Bytes tree_peak = TheoreticalPeak(graph_, model_, tree.order);
    if (tree_peak > input_peak) {
      result_.notes.push_back("the subgraph tree's order peaks at " + std::to_string(tree_peak) +
                              " B, above its input order's " + std::to_string(input_peak) +
                              " B; the input order is cut into windows instead");
      tree = WindowPartition(graph_, model_, best_order_, params_.partition);
    }

    // Warm starts: the best of the partition's sub-order and every baseline order restricted
    // to the leaf (a restriction of a topological order is topological for the leaf).
    std::vector<std::vector<int>> positions;
    for (const auto& candidate : candidates_) {
      std::vector<int> pos(U(graph_.num_ops()));
      for (size_t s = 0; s < candidate.second.size(); ++s)
        pos[U(candidate.second[s])] = static_cast<int>(s);
      positions.push_back(std::move(pos));
    }
    const int nl = static_cast<int>(tree.leaves.size());
    std::vector<LeafSlot> slots(U(nl));
    const bool order_proven = input_peak == forced_.bound;
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
      for (OpId op : leaf.ops) slot.forced = std::max(slot.forced, forced_.per_op[U(op)]);
      const bool can_gain = slot.warm_peak > forced_.bound && slot.warm_peak > slot.forced;
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
      if (slot.outcome == PartOutcome::kOptimal) ++counts.proved_optimal;
      if (slot.status == ilp::ModelStatus::kFeasibleTimeLimit ||
          slot.status == ilp::ModelStatus::kNoSolutionTimeLimit)
        ++counts.time_limited;
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

    // The order's label: the leaves that hold the peak decide it.
    bool all_peak_optimal = true, any_peak_time_limited = false;
    for (const LeafSlot& slot : slots) {
      if (slot.peak != peak) continue;
      all_peak_optimal = all_peak_optimal && slot.outcome == PartOutcome::kOptimal;
      any_peak_time_limited = any_peak_time_limited || slot.outcome == PartOutcome::kTimeLimited;
    }
    result_.peak_leaves_optimal = all_peak_optimal && peak > forced_.bound;
    result_.order_outcome =
        any_peak_time_limited ? PartOutcome::kTimeLimited : PartOutcome::kHeuristic;
    if (result_.peak_leaves_optimal)
      result_.notes.push_back(
          "the leaves holding the peak are proved optimal within the "
          "partition; the gap to the certified bound remains");
    pipeline_order_ = "leaf order ILPs from " + best_order_name_;

    std::vector<Bytes> offsets = Layout(tree, order);
    result_.time_limit_hit = counts.time_limited > 0 || counts.not_started > 0;
    return PlanOf(std::move(order), offsets);
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
        // An activation: created in an earlier leaf, freed in this one (ROAM's rule lays out
        // forward activations where they are freed).
        const OpId creator = graph_.tensors[U(model_.storages[U(sid)].root)].producer;
        out.activation.push_back(tree.leaf_of_op[U(creator)] != l);
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
      const double remaining = Remaining() - params_.solver_overshoot;
      if (!params_.leaf_layout.enabled || local.size() < 2 ||
          static_cast<int>(local.size()) > params_.leaf_layout.max_storages || Stopped() ||
          remaining <= 0.05 || LayoutHeight(local, greedy) == MaxLiveBytes(local))
        return;
      const double limit = std::min(params_.leaf_layout.time_limit, remaining);
      slot.solved = true;
      if (params_.leaf_layout.engine == LayoutEngine::kIlp) {
        ilp::LayoutIlpParams p;
        p.pinned_bottom = pinned;
        p.solve.time_limit_s = limit;
        p.solve.stop = control_.stop;
        ilp::LayoutIlpResult r =
            ilp::SolveLayoutIlp(local, params_.alignment, p, std::span<const Bytes>(greedy));
        if (r.height <= LayoutHeight(local, greedy)) slot.offsets = std::move(r.offsets);
        slot.outcome = r.status == ilp::ModelStatus::kOptimal ? PartOutcome::kOptimal
                       : r.from_warm_start || !r.model_built  ? PartOutcome::kHeuristic
                                                              : PartOutcome::kTimeLimited;
        return;
      }
      layout::LayoutParams p;
      p.pinned_bottom = pinned;
      p.time_limit_s = limit;
      p.search.bottom_left = params_.leaf_layout.bottom_left;
      layout::LayoutResult r =
          layout::SolveLayout(local, params_.alignment, p, std::span<const Bytes>(greedy));
      const bool improved = r.height < LayoutHeight(local, greedy);
      if (improved) slot.offsets = std::move(r.offsets);
      slot.outcome = r.status == layout::LayoutStatus::kOptimal ? PartOutcome::kOptimal
                     : improved                                 ? PartOutcome::kTimeLimited
                                                                : PartOutcome::kHeuristic;
    };
    FanOut("leaf layouts", nl, solve);
    bool any_time_limited = false;
    for (int l = 0; l < nl; ++l) {
      leaves[U(l)].offsets = std::move(slots[U(l)].offsets);
      if (slots[U(l)].solved) ++result_.leaves.layouts_solved;
      any_time_limited = any_time_limited || slots[U(l)].outcome == PartOutcome::kTimeLimited;
    }
    MergeResult merged = MergeLayouts(intervals, leaves, params_.alignment);
    merge_stats_ = merged.stats;

    // The merge against the greedy layouts on the same lifetimes: keep the lowest.
    std::vector<Bytes> best = std::move(merged.offsets);
    Bytes best_height = LayoutHeight(intervals, best);
    pipeline_layout_ = "leaf layouts merged";
    result_.layout_outcome = any_time_limited ? PartOutcome::kTimeLimited : PartOutcome::kHeuristic;
    for (const char* name : {"best-fit", "llfb"}) {
      std::vector<Bytes> o = PlaceBuffers(name, intervals, params_.alignment);
      if (const Bytes h = LayoutHeight(intervals, o); h < best_height) {
        best_height = h;
        best = std::move(o);
        pipeline_layout_ = name;
        result_.layout_outcome = PartOutcome::kHeuristic;
      }
    }
    if (merge_stats_.conflicts > 0)
      result_.notes.push_back("merge: " + std::to_string(merge_stats_.conflicts) +
                              " address conflicts between leaves, " +
                              std::to_string(merge_stats_.reassigned) + " temporaries reassigned");
    return best;
  }

  const Graph& graph_;
  const OptimizerParams& params_;
  const RunControl& control_;
  Clock::time_point started_, deadline_;
  int threads_ = 1;
  MemoryModel model_;
  Dependencies deps_;
  ForcedResidency forced_;
  std::vector<OpId> program_, best_order_;
  std::string best_order_name_, heuristic_layout_, pipeline_order_, pipeline_layout_;
  std::vector<std::pair<std::string, std::vector<OpId>>> candidates_;
  Plan heuristic_plan_;
  MergeStats merge_stats_;
  OptimizeResult result_;
};

}  // namespace

OptimizeResult Optimize(const Graph& graph, const OptimizerParams& params,
                        const RunControl& control) {
  return Run(graph, params, control).Go();
}

}  // namespace roam
