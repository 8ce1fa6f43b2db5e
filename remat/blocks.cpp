// The block pass: divide and conquer over ROAM's subgraph tree. A forward segment and its
// mirrored backward segment (an independent subgraph of the partition) hold the activations
// a block saves and the ops that would recompute them; the pass re-chooses, per group of
// consecutive blocks, which of their activations are recomputed, with the rest of the
// schedule fixed (docs/remat.md, "blocks").
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "core/deadline.h"
#include "core/types.h"
#include "partition/partition.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {

// One candidate of a group with what it frees at the steps over the budget (additively).
struct Option {
  Candidate c;
  std::vector<Bytes> freed;  // per excess step
};

// The cheapest subsets of options whose summed freed bytes cover every deficit, cheaper
// than limit, by depth-first branch and bound (options sorted dearest first, so the cost
// bound prunes early); at most max_nodes nodes, fewer once out_of_time says so (a node costs a
// pass over the excess steps: on GPT-2 XL at half one search took seconds past the deadline).
// Skips the subsets in banned.
std::vector<char> CheapestCover(const std::vector<Option>& options,
                                const std::vector<Bytes>& deficit, double limit,
                                const std::vector<std::vector<char>>& banned, int64_t max_nodes,
                                const std::function<bool()>& out_of_time) {
  const size_t k = options.size(), m = deficit.size();
  // suffix[i][s]: what options i.. can free at step s at most.
  std::vector<std::vector<Bytes>> suffix(k + 1, std::vector<Bytes>(m, 0));
  for (size_t i = k; i-- > 0;)
    for (size_t s = 0; s < m; ++s)
      suffix[i][s] = suffix[i + 1][s] + std::max<Bytes>(0, options[i].freed[s]);
  std::vector<Bytes> covered(m, 0);
  std::vector<char> pick(k, 0), best;
  double best_cost = limit;
  int64_t nodes = 0;
  auto dfs = [&](auto&& self, size_t i, double cost) -> void {
    if (++nodes > max_nodes || cost >= best_cost) return;
    if (nodes % 1024 == 0 && out_of_time()) {
      nodes = max_nodes;
      return;
    }
    bool done = true;
    for (size_t s = 0; s < m; ++s) {
      if (covered[s] >= deficit[s]) continue;
      done = false;
      if (covered[s] + suffix[i][s] < deficit[s]) return;
    }
    if (done) {
      if (std::find(banned.begin(), banned.end(), pick) != banned.end()) {
        // Already tried: look for a superset or another branch.
      } else {
        best_cost = cost;
        best = pick;
        return;
      }
    }
    if (i == k) return;
    pick[i] = 1;
    for (size_t s = 0; s < m; ++s) covered[s] += options[i].freed[s];
    self(self, i + 1, cost + options[i].c.cost);
    for (size_t s = 0; s < m; ++s) covered[s] -= options[i].freed[s];
    pick[i] = 0;
    self(self, i + 1, cost);
  };
  dfs(dfs, 0, 0.0);
  return best;
}

class BlockPass {
 public:
  BlockPass(const Graph& graph, const RematParams& params, Bytes budget,
            std::function<bool()> out_of_time)
      : graph_(graph),
        params_(params),
        budget_(budget),
        out_of_time_(std::move(out_of_time)),
        greedy_(graph, params) {}

  // Re-chooses group g's recomputations in schedule; true (and schedule replaced) when a
  // cheaper schedule within the budget was found.
  bool Improve(const std::vector<int>& group_of_op, int g, Schedule& schedule) {
    const double current = RecomputeCost(graph_, schedule);
    // The rest: the schedule without the runs of copies (consecutive copies, what one or more
    // evictions inserted at one point) that recompute an op of the group. Whole runs, since a
    // chain may reach into the previous group, and a copy of an in-place write left without
    // the copy of the storage it writes would write the original.
    std::vector<char> copy(schedule.size(), 0), drop(schedule.size(), 0);
    {
      std::vector<char> seen(U(graph_.num_ops()), 0);
      for (size_t i = 0; i < schedule.size(); ++i) {
        copy[i] = seen[U(schedule[i])];
        seen[U(schedule[i])] = 1;
      }
    }
    for (size_t i = 0; i < schedule.size();) {
      if (!copy[i]) {
        ++i;
        continue;
      }
      size_t j = i;
      bool mine = false;
      for (; j < schedule.size() && copy[j]; ++j) mine = mine || group_of_op[U(schedule[j])] == g;
      if (mine)
        std::fill(drop.begin() + static_cast<std::ptrdiff_t>(i),
                  drop.begin() + static_cast<std::ptrdiff_t>(j), 1);
      i = j;
    }
    // The dropped runs are candidates too, so that the incumbent's own choice is among them
    // and may be combined with others.
    Schedule rest;
    std::vector<Candidate> runs;
    double removed = 0;
    for (size_t i = 0; i < schedule.size(); ++i) {
      if (!drop[i]) {
        rest.push_back(schedule[i]);
        continue;
      }
      removed += greedy_.costs[U(schedule[i])];
      const auto at = static_cast<Step>(rest.size());
      if (i == 0 || !drop[i - 1] || runs.empty() || runs.back().at != at) {
        runs.emplace_back();
        runs.back().at = at;
      }
      runs.back().ops.push_back(schedule[i]);
      runs.back().cost += greedy_.costs[U(schedule[i])];
    }
    if (removed <= 0 || !greedy_.state.Reset(rest)) return false;
    const std::vector<Bytes> base = greedy_.state.Profile();
    std::vector<Step> excess;
    std::vector<Bytes> deficit;
    for (size_t s = 0; s < base.size(); ++s)
      if (base[s] > budget_) {
        excess.push_back(static_cast<Step>(s));
        deficit.push_back(base[s] - budget_);
      }
    if (excess.empty()) {  // the group's copies were not needed at all
      schedule = std::move(rest);
      return true;
    }
    std::vector<Option> options = Options(group_of_op, g, rest, base, excess, std::move(runs));
    if (options.empty()) return false;
    // Dearest first: the cost bound cuts the tree early.
    std::stable_sort(options.begin(), options.end(),
                     [](const Option& a, const Option& b) { return a.c.cost > b.c.cost; });
    std::vector<std::vector<char>> banned;
    for (int attempt = 0; attempt < params_.blocks.verifications; ++attempt) {
      std::vector<char> pick = CheapestCover(options, deficit, removed, banned,
                                             params_.blocks.search_nodes, out_of_time_);
      if (pick.empty()) return false;
      banned.push_back(pick);
      std::vector<const Candidate*> chosen;
      double cost = 0;
      for (size_t i = 0; i < options.size(); ++i)
        if (pick[i]) {
          chosen.push_back(&options[i].c);
          cost += options[i].c.cost;
        }
      std::optional<Schedule> trial = Verify(rest, chosen, removed - cost);
      if (!trial) continue;
      const double trial_cost = RecomputeCost(graph_, *trial);
      if (trial_cost < current - 1e-9 * std::max(1.0, current)) {
        schedule = std::move(*trial);
        return true;
      }
    }
    return false;
  }

 private:
  // The greedy's evictions at the excess steps that recompute an op of the group, and the
  // dropped runs, with what each alone frees at every excess step.
  std::vector<Option> Options(const std::vector<int>& group_of_op, int g, const Schedule& rest,
                              const std::vector<Bytes>& base, const std::vector<Step>& excess,
                              std::vector<Candidate> runs) {
    std::map<std::pair<Step, std::vector<OpId>>, Candidate> unique;
    const size_t splits = std::min<size_t>(excess.size(), U(params_.blocks.split_steps));
    for (size_t j = 0; j < splits; ++j) {
      const Step sp = excess[splits <= 1 ? 0 : j * (excess.size() - 1) / (splits - 1)];
      for (Candidate& c : CandidatesAt(greedy_.state, sp, greedy_.costs, greedy_.flags, params_)) {
        bool inside = false;
        for (OpId op : c.ops) inside = inside || group_of_op[U(op)] == g;
        if (!inside) continue;
        auto key = std::make_pair(c.at, c.ops);
        auto it = unique.find(key);
        if (it == unique.end())
          unique.emplace(std::move(key), std::move(c));
        else
          it->second.score = std::max(it->second.score, c.score);
      }
    }
    std::vector<Candidate> pool;
    for (auto& [key, c] : unique) pool.push_back(std::move(c));
    std::stable_sort(pool.begin(), pool.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    if (pool.size() > U(params_.blocks.max_candidates))
      pool.resize(U(params_.blocks.max_candidates));
    for (Candidate& run : runs) {
      const bool known = std::any_of(pool.begin(), pool.end(), [&](const Candidate& c) {
        return c.at == run.at && c.ops == run.ops;
      });
      if (!known) pool.push_back(std::move(run));
    }
    std::vector<Option> options;
    // Each candidate is inserted into the state of rest and removed again once measured.
    bool holds_rest = true;
    for (Candidate& c : pool) {
      if (!holds_rest && !(holds_rest = greedy_.state.Reset(rest))) continue;
      if (!greedy_.state.CanInsert(c.at, c.ops)) continue;
      if (!greedy_.state.Insert(c.at, c.ops)) {
        holds_rest = false;
        continue;
      }
      const std::vector<Bytes>& after = greedy_.state.Profile();
      const auto shift = static_cast<Step>(c.ops.size());
      Option o;
      o.freed.reserve(excess.size());
      bool helps = false;
      for (Step s : excess) {
        const Step t = s >= c.at ? s + shift : s;
        o.freed.push_back(base[U(s)] - after[U(t)]);
        helps = helps || o.freed.back() > 0;
      }
      holds_rest = greedy_.state.Remove(c.at, shift);
      if (!helps) continue;
      o.c = std::move(c);
      options.push_back(std::move(o));
    }
    return options;
  }

  // The rest with the chosen evictions inserted (the latest first, so the earlier steps
  // stay put), repaired by the greedy's evictions at the peak for at most allowance more
  // cost when the additive estimate was short; nothing when it is invalid or over budget.
  std::optional<Schedule> Verify(const Schedule& rest, std::vector<const Candidate*> chosen,
                                 double allowance) {
    std::stable_sort(chosen.begin(), chosen.end(),
                     [](const Candidate* a, const Candidate* b) { return a->at > b->at; });
    if (!greedy_.state.Reset(rest)) return std::nullopt;
    for (const Candidate* c : chosen)
      if (!greedy_.state.CanInsert(c->at, c->ops) || !greedy_.state.Insert(c->at, c->ops))
        return std::nullopt;
    RepairAtPeak(greedy_.state, budget_, allowance, greedy_.costs, greedy_.flags, params_);
    if (greedy_.state.Peak() > budget_) return std::nullopt;
    return greedy_.state.schedule();
  }

  const Graph& graph_;
  const RematParams& params_;
  Bytes budget_;
  std::function<bool()> out_of_time_;
  GreedyTools greedy_;
};

}  // namespace

std::vector<int> GroupOfOp(const Graph& graph, const RematParams& params, const Schedule& start,
                           int& num_groups, PartitionArg partition) {
  num_groups = 0;
  std::vector<int> group(U(graph.num_ops()), -1);
  std::optional<SubgraphTree> own;
  if (partition == nullptr) {
    own = PartitionOf(graph, BuildMemoryModel(graph, params.alignment), start);
    partition = &own;
  }
  if (!partition->has_value()) return group;  // no partition of this order: no blocks
  const SubgraphTree& tree = **partition;
  std::vector<int> segment_group(U(tree.num_segments), -1);
  std::vector<const SubgraphNode*> blocks;
  for (const SubgraphNode& node : tree.nodes)
    if (node.type == NodeType::kIndependent && !node.parts.empty()) blocks.push_back(&node);
  std::stable_sort(blocks.begin(), blocks.end(), [](const SubgraphNode* a, const SubgraphNode* b) {
    return a->parts.front().first_step < b->parts.front().first_step;
  });
  int held = 0;
  for (const SubgraphNode* node : blocks) {
    const NodePart& forward = node->parts.front();
    if (held >= params.blocks.group_ops || num_groups == 0) {
      ++num_groups;
      held = 0;
    }
    held += static_cast<int>(forward.last_step - forward.first_step + 1);
    for (const NodePart& part : node->parts)
      for (int seg = part.first_segment; seg <= part.last_segment; ++seg)
        if (seg >= 0 && seg < tree.num_segments) segment_group[U(seg)] = num_groups - 1;
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int seg = tree.segment_of_op[U(op)];
    if (seg >= 0 && seg < tree.num_segments) group[U(op)] = segment_group[U(seg)];
  }
  return group;
}

MethodResult ImproveByBlocks(const Graph& graph, const Schedule& start,
                             const MethodResult& incumbent, Bytes budget, const RematParams& params,
                             double time_limit_s, PartitionArg partition) {
  if (incumbent.peak > budget || params.blocks.rounds <= 0) return incumbent;
  const auto started = std::chrono::steady_clock::now();
  auto out_of_time = [&] { return time_limit_s > 0 && SecondsSince(started) > time_limit_s; };
  int num_groups = 0;
  const std::vector<int> group_of_op = GroupOfOp(graph, params, start, num_groups, partition);
  if (num_groups == 0) return incumbent;
  BlockPass pass(graph, params, budget, out_of_time);
  Schedule schedule = incumbent.schedule;
  bool changed = false;
  for (int round = 0; round < params.blocks.rounds && !out_of_time(); ++round) {
    bool improved = false;
    for (int g = 0; g < num_groups && !out_of_time(); ++g)
      if (pass.Improve(group_of_op, g, schedule)) improved = true;
    changed = changed || improved;
    if (!improved) break;
  }
  if (!changed) return incumbent;
  const Evaluated e = Evaluate(graph, schedule, params);
  if (e.peak > budget || e.recompute_cost >= incumbent.recompute_cost) return incumbent;
  MethodResult result = incumbent;
  result.schedule = std::move(schedule);
  result.peak = e.peak;
  result.recompute_cost = e.recompute_cost;
  result.method = "blocks";
  result.status = Status::kFeasible;
  return result;
}

}  // namespace roam::remat::detail
