// The budget split's options per group, each measured alone on the base by the greedy's
// incremental state and summarised as what it keeps off the arena while the deeper groups run
// and what it frees during its own steps and the next deeper group's (docs/remat.md, "The
// budget split").
#include "remat/blocks_dp_options.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/types.h"

namespace roam::remat::detail {
bool Tracked::Insert(Step at, const std::vector<OpId>& ops) {
  if (!state.CanInsert(at, ops) || !state.Insert(at, ops)) return false;
  tag.insert(tag.begin() + at, ops.size(), Step{-1});
  return true;
}

bool Tracked::Remove(Step at, Step k) {
  if (!state.Remove(at, k)) return false;
  tag.erase(tag.begin() + at, tag.begin() + at + k);
  return true;
}

Attached Tracked::Copies() const {
  Attached out;
  std::vector<OpId> pending;
  const Schedule& s = state.schedule();
  for (size_t i = 0; i < s.size(); ++i) {
    if (tag[i] < 0) {
      pending.push_back(s[i]);
      continue;
    }
    for (OpId op : pending) out.emplace_back(tag[i], op);
    pending.clear();
  }
  for (OpId op : pending) out.emplace_back(static_cast<Step>(tag.size()), op);
  return out;
}

std::vector<Bytes> Tracked::Held(size_t base_steps) {
  std::vector<Bytes> held(base_steps + 1, 0);
  const std::vector<Bytes>& profile = state.Profile();
  Bytes run = 0;
  for (size_t i = 0; i < tag.size(); ++i) {
    run = std::max(run, profile[i]);
    if (tag[i] < 0) continue;
    held[U(tag[i])] = run;
    run = 0;
  }
  held[base_steps] = run;
  return held;
}

Schedule Assemble(const Schedule& base, const std::vector<const Attached*>& parts,
                  std::vector<Step>* tag) {
  std::vector<std::vector<OpId>> before(base.size() + 1);
  for (const Attached* part : parts)
    for (const auto& [x, op] : *part) before[U(x)].push_back(op);
  Schedule out;
  if (tag) tag->clear();
  for (size_t x = 0; x <= base.size(); ++x) {
    out.insert(out.end(), before[x].begin(), before[x].end());
    if (tag) tag->insert(tag->end(), before[x].size(), Step{-1});
    if (x == base.size()) break;
    out.push_back(base[x]);
    if (tag) tag->push_back(static_cast<Step>(x));
  }
  return out;
}

OptionMeasurer::OptionMeasurer(const Graph& graph, const RematParams& params,
                               const GreedyTools& greedy, const GroupedBase& base)
    : graph_(graph), params_(params), greedy_(greedy), base_(base) {}

std::vector<GroupOption> OptionMeasurer::Measure(size_t i, const Attached& own, Step split) {
  std::vector<GroupOption> options;
  MeasureOne(i, {}, options);
  MeasureOne(i, own, options);
  Subsets(i, split, options);
  return options;
}

Tracked& OptionMeasurer::Base() {
  if (!base_state_) {
    base_state_.emplace(
        Tracked{GreedyState(graph_, greedy_.model, greedy_.costs, params_.rule), {}});
    base_state_->state.Reset(base_.schedule);
    base_state_->tag.resize(base_.schedule.size());
    for (size_t x = 0; x < base_.schedule.size(); ++x) base_state_->tag[x] = static_cast<Step>(x);
  }
  return *base_state_;
}

Tracked& OptionMeasurer::Scratch() {
  if (!scratch_) scratch_.emplace(Base());
  return *scratch_;
}

void OptionMeasurer::MeasureOne(size_t i, const Attached& copies,
                                std::vector<GroupOption>& options) {
  if (copies.empty()) {
    Record(i, Base(), options);
    return;
  }
  Tracked& t = Fresh();
  // Insert the latest first, so the earlier attachment points stay where they are.
  for (size_t j = copies.size(); j-- > 0;) {
    size_t a = j;
    while (a > 0 && copies[a - 1].first == copies[j].first) --a;
    std::vector<OpId> ops;
    for (size_t b = a; b <= j; ++b) ops.push_back(copies[b].second);
    if (!t.Insert(copies[j].first, ops)) return;
    j = a;
  }
  Record(i, t, options);
}

void OptionMeasurer::Record(size_t i, Tracked& t, std::vector<GroupOption>& options) {
  const size_t n = base_.schedule.size();
  measured_steps_ += static_cast<std::int64_t>(t.tag.size());
  const std::vector<Bytes> held = t.Held(n);
  GroupOption o;
  o.copies = t.Copies();
  for (const auto& [x, op] : o.copies) o.cost += greedy_.costs[U(op)];
  o.kept_off = std::numeric_limits<Bytes>::max();
  o.freed.assign(n + 1, 0);
  bool deeper = false;
  for (size_t x = 0; x <= n; ++x) {
    const int r = base_.region[x];
    if (r == static_cast<int>(i) || r == static_cast<int>(i) + 1)
      o.freed[x] = base_.profile[x] - held[x];
    if (r > static_cast<int>(i) + 1) {
      deeper = true;
      o.kept_off = std::min(o.kept_off, base_.profile[x] - held[x]);
    }
  }
  if (!deeper) o.kept_off = 0;
  o.kept_off = std::max<Bytes>(0, o.kept_off);
  for (const auto& [x, op] : o.copies) o.recomputed.push_back(op);
  std::sort(o.recomputed.begin(), o.recomputed.end());
  {
    const std::vector<int>& group = base_.group_of_op;
    const MemoryModel& model = greedy_.model;
    std::vector<StorageId> seen;
    std::vector<char> mine(U(graph_.num_ops()), 0);
    for (const auto& [x, op] : o.copies) {
      for (TensorId in : graph_.ops[U(op)].inputs) {
        const OpId p = graph_.tensors[U(in)].producer;
        if (p == kNoOp || mine[U(p)] || group[U(p)] < 0 || group[U(p)] == base_.order[i]) continue;
        const StorageId sid = model.storage_of[U(in)];
        if (!model.storages[U(sid)].planned() ||
            std::find(seen.begin(), seen.end(), sid) != seen.end())
          continue;
        seen.push_back(sid);
        o.reads.emplace_back(p, model.storages[U(sid)].size);
      }
      mine[U(op)] = 1;
    }
  }
  for (const GroupOption& other : options)
    if (other.cost <= o.cost && other.kept_off == o.kept_off && other.freed == o.freed) return;
  options.push_back(std::move(o));
}

// Every subset of the group's evictions at step split (the group's storages held across it,
// recomputed right before their next use), inserted one by one, the latest made first, so
// that the copy of an earlier activation is made for the first of its readers, copies
// included, and serves them all.
void OptionMeasurer::Subsets(size_t i, Step split, std::vector<GroupOption>& options) {
  if (params_.blocks_dp.targets <= 0 || split < 0) return;
  const int g = base_.order[i];
  const Schedule& base = base_.schedule;
  Tracked& t = Base();
  std::vector<OpId> targets;
  for (const Candidate& c : CandidatesAt(t.state, split, greedy_.costs, greedy_.flags, params_)) {
    const OpId made = c.ops.back();
    if (base_.group_of_op[U(made)] != g ||
        std::find(targets.begin(), targets.end(), made) != targets.end())
      continue;
    targets.push_back(made);
    if (static_cast<int>(targets.size()) >= params_.blocks_dp.targets) break;
  }
  // Latest made first: its copies become readers of the earlier ones.
  std::vector<Step> made_at(U(graph_.num_ops()), -1);
  for (size_t x = 0; x < base.size(); ++x)
    if (made_at[U(base[x])] < 0) made_at[U(base[x])] = static_cast<Step>(x);
  std::stable_sort(targets.begin(), targets.end(),
                   [&](OpId a, OpId b) { return made_at[U(a)] > made_at[U(b)]; });
  auto dfs = [&](auto&& self, size_t j, Tracked& cur, bool any) -> void {
    if (j == targets.size()) {
      if (any) Record(i, cur, options);
      return;
    }
    self(self, j + 1, cur, any);
    for (const Candidate& c :
         CandidatesAt(cur.state, split, greedy_.costs, greedy_.flags, params_)) {
      if (c.ops.back() != targets[j]) continue;
      // Into cur and out again once the deeper subsets are measured (a copy of cur only
      // where the insert fails, which leaves the state unusable).
      const Schedule before = cur.state.schedule();
      const std::vector<Step> tag = cur.tag;
      if (cur.Insert(c.at, c.ops)) {
        self(self, j + 1, cur, true);
        if (cur.Remove(c.at, static_cast<Step>(c.ops.size()))) break;
      }
      if (!cur.state.Reset(before)) throw std::logic_error("budget split: a measured base lost");
      cur.tag = tag;
      break;
    }
  };
  dfs(dfs, 0, t, false);
}

}  // namespace roam::remat::detail
