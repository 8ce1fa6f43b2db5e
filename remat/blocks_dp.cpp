// The budget split over the chain of blocks: divide and conquer over ROAM's subgraph tree with
// an exact choice across all groups at once (docs/remat.md, "The budget split"). Each group
// of consecutive independent subgraphs gets a set of options (which of its activations it
// recomputes and where); each option is measured alone on the schedule without any group's
// copies by the greedy's incremental state, and summarised as what it keeps off the arena
// while the deeper groups run and what the arena needs during its own steps (all of which
// blocks_dp_options.h does; this file cuts the groups and the base). A dynamic
// programme over the groups in forward order then picks one option per group, the cheapest
// whose held bytes fit at every group's steps; the assembled schedule is checked by roam's
// memory model and kept only when it fits and is cheaper than the incumbent.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/deadline.h"
#include "core/types.h"
#include "partition/partition.h"
#include "remat/blocks_dp_options.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {

class BudgetSplit {
 public:
  BudgetSplit(const Graph& graph, const RematParams& params, Bytes budget, PartitionArg partition)
      : graph_(graph),
        params_(params),
        budget_(budget),
        partition_(partition),
        greedy_(graph, params) {}

  std::optional<Schedule> Run(const Schedule& start, const Schedule& incumbent,
                              double incumbent_cost, const std::function<bool()>& out_of_time) {
    const int num_groups = Groups(start);
    if (num_groups == 0) return std::nullopt;
    // The base: the incumbent without the runs of copies that belong to a group (a run
    // belongs to the group of its last grouped op); the incumbent's own choice per group is
    // kept as an option.
    std::vector<Attached> own(U(num_groups));
    {
      std::vector<char> seen(U(graph_.num_ops()), 0);
      std::vector<OpId> run;
      auto flush = [&] {
        if (run.empty()) return;
        int g = -1;
        for (OpId op : run)
          if (base_.group_of_op[U(op)] >= 0) g = base_.group_of_op[U(op)];
        if (g < 0) {
          base_.schedule.insert(base_.schedule.end(), run.begin(), run.end());
        } else {
          for (OpId op : run) own[U(g)].emplace_back(static_cast<Step>(base_.schedule.size()), op);
        }
        run.clear();
      };
      for (OpId op : incumbent) {
        if (seen[U(op)]) {
          run.push_back(op);
          continue;
        }
        seen[U(op)] = 1;
        flush();
        base_.schedule.push_back(op);
      }
      flush();
    }
    if (!greedy_.state.Reset(base_.schedule)) return std::nullopt;
    const size_t n = base_.schedule.size();
    base_.profile = greedy_.state.Profile();
    base_.profile.push_back(0);
    // Group spans on the base: from the first forward op of the group to the last original
    // computation that reads what its forward ops made.
    std::vector<Step> first(U(num_groups), std::numeric_limits<Step>::max()),
        last(U(num_groups), -1), backward(U(num_groups), std::numeric_limits<Step>::max());
    {
      std::vector<char> seen(U(graph_.num_ops()), 0);
      for (size_t x = 0; x < n; ++x) {
        const OpId op = base_.schedule[x];
        if (seen[U(op)]) continue;
        seen[U(op)] = 1;
        const auto s = static_cast<Step>(x);
        if (const int g = base_.group_of_op[U(op)]; g >= 0) {
          first[U(g)] = std::min(first[U(g)], s);
          last[U(g)] = std::max(last[U(g)], s);
          continue;
        }
        for (TensorId t : graph_.ops[U(op)].inputs) {
          const OpId p = graph_.tensors[U(t)].producer;
          if (p == kNoOp || base_.group_of_op[U(p)] < 0) continue;
          const int g = base_.group_of_op[U(p)];
          last[U(g)] = std::max(last[U(g)], s);
          backward[U(g)] = std::min(backward[U(g)], s);
        }
      }
    }
    // Groups in forward order; the region of a step is the innermost group whose span holds it.
    std::vector<int>& order = base_.order;
    for (int g = 0; g < num_groups; ++g)
      if (last[U(g)] >= 0) order.push_back(g);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return first[U(a)] < first[U(b)]; });
    const size_t k = order.size();
    // The decomposition assumes the chain's spans nest (each group's forward and backward
    // enclose the deeper groups'); where many groups outlive an outer group's span (e.g. a
    // residual stream read by every block's backward), options measure nothing kept off and
    // the programme cannot help: give up before measuring anything.
    {
      size_t crossing = 0;
      Step outer_last = std::numeric_limits<Step>::max();
      for (size_t i = 0; i < k; ++i) {
        if (i > 0 && last[U(order[i])] > outer_last) ++crossing;
        outer_last = std::min(outer_last, last[U(order[i])]);
      }
      if (k > 1 && static_cast<double>(crossing) >
                       params_.blocks_dp.max_crossing * static_cast<double>(k - 1))
        return std::nullopt;
    }
    base_.region.assign(n + 1, -1);
    for (size_t i = 0; i < k; ++i) {
      const int g = order[i];
      for (Step s = first[U(g)]; s <= last[U(g)]; ++s) base_.region[U(s)] = static_cast<int>(i);
    }
    // Steps outside every span are covered by no group's option.
    Bytes outside = 0;
    for (size_t x = 0; x <= n; ++x)
      if (base_.region[x] < 0) outside = std::max(outside, base_.profile[x]);
    if (outside > budget_) return std::nullopt;
    // Options per group, each group's evictions taken at the step before its backward starts.
    OptionMeasurer measurer(graph_, params_, greedy_, base_);
    options_.assign(k, {});
    const std::int64_t max_measured = params_.blocks_dp.max_measured_steps;
    for (size_t i = 0; i < k && !out_of_time(); ++i) {
      const int g = order[i];
      const Step split =
          backward[U(g)] == std::numeric_limits<Step>::max() ? last[U(g)] : backward[U(g)] - 1;
      options_[i] = measurer.Measure(i, own[U(g)], split);
      if (max_measured > 0 && measurer.measured_steps() > max_measured) return std::nullopt;
    }
    if (out_of_time()) return std::nullopt;
    // The dynamic programme, first retried with the target of a group's steps lowered by the
    // excess the assembled schedule had there (interactions the measurement alone missed);
    // then, since the summary is conservative (the least bytes kept off, conflicts counted
    // whole), with every target raised by an offset doubling from budget / 256 while that
    // finds cheaper schedules that fit (a miss teaches its excess as before).
    PairTables();
    quantum_ = params_.blocks_dp.quantum > 0 ? params_.blocks_dp.quantum
                                             : std::max<Bytes>(1, budget_ / 4096);
    std::optional<Schedule> best;
    double best_cost = incumbent_cost;
    std::vector<Bytes> lower(k, 0);
    Bytes relax = 0;
    bool relaxing = false;
    std::vector<std::vector<size_t>> tried;
    // Per miss: its pick and the groups whose steps (or the next group's) were over; a
    // combination that agrees with it on all of them most likely misses there too.
    std::vector<std::pair<std::vector<size_t>, std::vector<size_t>>> misses;
    auto repeats_a_miss = [&](const std::vector<size_t>& pick) {
      for (const auto& [missed, where] : misses) {
        bool same = true;
        for (size_t i : where) same = same && pick[i] == missed[i];
        if (same) return true;
      }
      return false;
    };
    for (int attempt = 0; attempt < params_.blocks_dp.retries && !out_of_time(); ++attempt) {
      std::vector<Bytes> target = lower;
      for (Bytes& t : target) t -= relax;
      // The programme's cheapest combinations, verified in turn: the first that fits (after
      // the greedy's repair) is kept; the first miss teaches its excess.
      bool fits = false, cheaper = false, taught = false;
      const std::optional<std::vector<std::vector<size_t>>> picks =
          Choose(target, best_cost, out_of_time);
      if (!picks) break;  // out of work or time
      for (const std::vector<size_t>& pick : *picks) {
        if (out_of_time()) break;
        std::vector<const Attached*> parts;
        double estimate = 0;
        for (size_t i = 0; i < k; ++i) {
          parts.push_back(&options_[i][pick[i]].copies);
          estimate += options_[i][pick[i]].cost;
        }
        if (estimate >= best_cost || std::find(tried.begin(), tried.end(), pick) != tried.end() ||
            repeats_a_miss(pick))
          continue;
        tried.push_back(pick);
        cheaper = true;
        Tracked& t = measurer.Scratch();
        Schedule trial = Assemble(base_.schedule, parts, &t.tag);
        if (!t.state.Reset(trial)) continue;
        if (t.state.Peak() > budget_) {
          const std::vector<Bytes> held = t.Held(base_.schedule.size());
          std::vector<Bytes> excess(k, 0);
          for (size_t x = 0; x < held.size(); ++x)
            if (held[x] > budget_ && base_.region[x] >= 0)
              excess[U(base_.region[x])] = std::max(excess[U(base_.region[x])], held[x] - budget_);
          std::vector<size_t> where;
          for (size_t i = 0; i < k; ++i)
            if (excess[i] > 0 || (i + 1 < k && excess[i + 1] > 0)) where.push_back(i);
          misses.emplace_back(pick, std::move(where));
          if (!taught) {
            taught = true;
            for (size_t i = 0; i < k; ++i)
              if (excess[i] > 0) lower[i] += excess[i] + relax;
          }
          RepairAtPeak(t.state, budget_, best_cost - RecomputeCost(graph_, trial), greedy_.costs,
                       greedy_.flags, params_);
        }
        if (t.state.Peak() <= budget_) {
          const double cost = RecomputeCost(graph_, t.state.schedule());
          if (cost < best_cost) {
            best_cost = cost;
            best = t.state.schedule();
            fits = true;
            break;
          }
        }
      }
      // Relax once a schedule fits or nothing new and cheaper comes from the current target;
      // harder after each gain and where nothing new came.
      if (!relaxing) {
        if (fits || !cheaper) {
          relaxing = true;
          relax = std::max<Bytes>(1, budget_ / 256);
        }
      } else if (fits || !cheaper) {
        relax *= 2;
      }
    }
    return best;
  }

 private:
  // Cuts the forward ops (in start's order) into groups of at least blocks_dp_group_ops ops,
  // each ending right after a memory-insensitive op of the partition where there are such
  // (Chen et al.'s cut: only that op's output crosses it), else by count. Sets base_.group_of_op
  // (-1 for ops outside the forward); returns the number of groups.
  int Groups(const Schedule& start) {
    base_.group_of_op.assign(U(graph_.num_ops()), -1);
    const std::vector<char> forward = ForwardOps(graph_, start, params_);
    std::vector<char> insensitive(U(graph_.num_ops()), 0);
    bool any = false;
    std::optional<SubgraphTree> own;
    PartitionArg partition = partition_;
    if (partition == nullptr) {
      own = PartitionOf(graph_, greedy_.model, start);
      partition = &own;
    }
    if (partition->has_value())  // else no partition of this order: cut by count
      for (OpId op : (*partition)->insensitive) {
        insensitive[U(op)] = 1;
        any = true;
      }
    int groups = 0, held = 0;
    for (OpId op : start) {
      if (!forward[U(op)] || base_.group_of_op[U(op)] >= 0) continue;
      if (groups == 0) groups = 1;
      base_.group_of_op[U(op)] = groups - 1;
      ++held;
      if (held >= params_.blocks_dp.group_ops && (!any || insensitive[U(op)])) {
        ++groups;
        held = 0;
      }
    }
    if (held == 0 && groups > 0) --groups;
    return groups;
  }

  // One option per group, the cheapest set that fits every group's steps (their excess over
  // the budget, raised by lower bytes), by a dynamic programme over the groups in forward
  // order. At the steps of group i's region the arena holds the base minus what groups i and
  // i - 1 free there (measured per step) minus what the groups further out keep off (each
  // the least it keeps off there); so the state is the option of the previous group and the
  // bytes the groups before it keep off, and per previous option the Pareto front of (cost,
  // bytes kept off) is kept.
  // Per group i > 0 and pair of options (a of group i - 1, b of group i): the bytes of group
  // i - 1 that b's copies read from the original computations where a recomputes them, and
  // the excess over the budget at group i's steps with both (plus that conflict).
  void PairTables() {
    const size_t k = options_.size(), n = base_.schedule.size();
    std::vector<std::vector<size_t>> steps(k);
    for (size_t x = 0; x <= n; ++x)
      if (base_.region[x] >= 0) steps[U(base_.region[x])].push_back(x);
    pair_need_.assign(k, {});
    pair_conflict_.assign(k, {});
    for (size_t i = 1; i < k; ++i) {
      const auto& before = options_[i - 1];
      const auto& here = options_[i];
      auto& need = pair_need_[i];
      auto& conflict = pair_conflict_[i];
      need.assign(before.size(),
                  std::vector<Bytes>(here.size(), std::numeric_limits<Bytes>::min()));
      conflict.assign(before.size(), std::vector<Bytes>(here.size(), 0));
      for (size_t a = 0; a < before.size(); ++a)
        for (size_t b = 0; b < here.size(); ++b) {
          for (const auto& [p, size] : here[b].reads)
            if (std::binary_search(before[a].recomputed.begin(), before[a].recomputed.end(), p))
              conflict[a][b] += size;
          for (size_t x : steps[i])
            need[a][b] = std::max(need[a][b], base_.profile[x] - before[a].freed[x] -
                                                  here[b].freed[x] + conflict[a][b] - budget_);
        }
    }
  }

  // Up to blocks_dp_candidates distinct combinations, cheapest first. Per option b of a
  // group and quantum of bytes kept off, the K cheapest paths are kept, and a path survives
  // the Pareto front while fewer than K kept paths keep at least as much off for no more:
  // any completion of a path dominated K times completes its dominators too, so the K
  // cheapest combinations overall survive. Distinct paths are distinct combinations (the
  // bytes kept off follow from the options, so one combination reaches one bucket once).
  // nullopt once its runs have weighed blocks_dp.max_transitions pairs in all, or out of time.
  std::optional<std::vector<std::vector<size_t>>> Choose(const std::vector<Bytes>& lower,
                                                         double limit,
                                                         const std::function<bool()>& out_of_time) {
    struct State {
      double cost;
      Bytes off;    // kept off by the groups before the previous one
      size_t prev;  // the previous group's option
      int parent;
    };
    const size_t k = options_.size(), n = base_.schedule.size();
    const auto keep = static_cast<size_t>(std::max(1, params_.blocks_dp.candidates));
    if (k == 0) return std::vector<std::vector<size_t>>{};
    std::vector<std::vector<size_t>> steps(k);  // per region: its steps
    for (size_t x = 0; x <= n; ++x)
      if (base_.region[x] >= 0) steps[U(base_.region[x])].push_back(x);
    std::vector<std::vector<State>> stages(k);
    for (size_t o = 0; o < options_[0].size(); ++o) {
      Bytes need = std::numeric_limits<Bytes>::min();
      for (size_t x : steps[0])
        need = std::max(need, base_.profile[x] - options_[0][o].freed[x] - budget_);
      if (need + lower[0] <= 0 && options_[0][o].cost < limit)
        stages[0].push_back({options_[0][o].cost, 0, o, -1});
    }
    for (size_t i = 1; i < k; ++i) {
      const auto& before = options_[i - 1];
      const auto& here = options_[i];
      const std::vector<std::vector<Bytes>>& need = pair_need_[i];
      const std::vector<std::vector<Bytes>>& conflict = pair_conflict_[i];
      // Per option b here: the cheapest states per quantum of bytes kept off (rounded down,
      // so conservative), then their front from the most kept off down.
      const Bytes q = quantum_;
      transitions_ += static_cast<std::int64_t>(stages[i - 1].size() * here.size());
      const std::int64_t max_transitions = params_.blocks_dp.max_transitions;
      if ((max_transitions > 0 && transitions_ > max_transitions) || out_of_time())
        return std::nullopt;
      for (size_t b = 0; b < here.size(); ++b) {
        std::vector<std::vector<std::pair<double, int>>> bucket;  // (cost, parent) per quantum
        for (size_t p = 0; p < stages[i - 1].size(); ++p) {
          const State& s = stages[i - 1][p];
          const double cost = s.cost + here[b].cost;
          if (cost >= limit || s.off < need[s.prev][b] + lower[i]) continue;
          const Bytes off = s.off + before[s.prev].kept_off - conflict[s.prev][b];
          if (off < 0) continue;
          const auto slot = static_cast<size_t>(off / q);
          if (slot >= bucket.size()) bucket.resize(slot + 1);
          auto& in = bucket[slot];
          in.emplace_back(cost, static_cast<int>(p));
          std::sort(in.begin(), in.end());
          if (in.size() > keep) in.pop_back();
        }
        std::vector<double> kept;  // costs kept so far, sorted
        for (size_t slot = bucket.size(); slot-- > 0;)
          for (const auto& [cost, parent] : bucket[slot]) {
            const auto dominators = static_cast<size_t>(
                std::upper_bound(kept.begin(), kept.end(), cost) - kept.begin());
            if (dominators >= keep) continue;
            kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(dominators), cost);
            stages[i].push_back({cost, static_cast<Bytes>(slot) * q, b, parent});
          }
      }
      if (stages[i].empty()) return std::vector<std::vector<size_t>>{};
    }
    std::vector<size_t> ends(stages[k - 1].size());
    for (size_t j = 0; j < ends.size(); ++j) ends[j] = j;
    std::stable_sort(ends.begin(), ends.end(), [&](size_t a, size_t b) {
      return stages[k - 1][a].cost < stages[k - 1][b].cost;
    });
    if (ends.size() > keep) ends.resize(keep);
    std::vector<std::vector<size_t>> picks;
    for (size_t at : ends) {
      std::vector<size_t> pick(k);
      int p = static_cast<int>(at);
      for (size_t i = k; i-- > 0;) {
        const State& s = stages[i][U(p)];
        pick[i] = s.prev;
        p = s.parent;
      }
      picks.push_back(std::move(pick));
    }
    return picks;
  }

  const Graph& graph_;
  const RematParams& params_;
  Bytes budget_;
  PartitionArg partition_;
  GreedyTools greedy_;
  GroupedBase base_;
  std::vector<std::vector<GroupOption>> options_;  // per group, by rank
  std::vector<std::vector<std::vector<Bytes>>> pair_need_, pair_conflict_;
  Bytes quantum_ = 1;
  std::int64_t transitions_ = 0;  // (state, option) pairs weighed by Choose, in all
};

}  // namespace

MethodResult SplitBudgetByBlocks(const Graph& graph, const Schedule& start,
                                 const MethodResult& incumbent, Bytes budget,
                                 const RematParams& params, double time_limit_s,
                                 PartitionArg partition) {
  if (incumbent.peak > budget || params.blocks_dp.group_ops <= 0) return incumbent;
  const auto started = std::chrono::steady_clock::now();
  const std::function<bool()> out_of_time = [&] {
    return time_limit_s > 0 && SecondsSince(started) > time_limit_s;
  };
  BudgetSplit split(graph, params, budget, partition);
  std::optional<Schedule> schedule =
      split.Run(start, incumbent.schedule, incumbent.recompute_cost, out_of_time);
  if (!schedule) return incumbent;
  if (!CheckSchedule(graph, *schedule, params.rule).empty()) return incumbent;
  const Evaluated e = Evaluate(graph, *schedule, params);
  if (e.peak > budget || e.recompute_cost >= incumbent.recompute_cost) return incumbent;
  MethodResult result = incumbent;
  result.schedule = std::move(*schedule);
  result.peak = e.peak;
  result.recompute_cost = e.recompute_cost;
  result.method = "blocks-dp";
  result.status = Status::kFeasible;
  if (params.blocks_dp.polish) {
    MethodResult polished = Polish(graph, result, budget, params);
    if (polished.peak <= budget && polished.recompute_cost < result.recompute_cost)
      result = std::move(polished);
  }
  return result;
}

}  // namespace roam::remat::detail
