// The greedy baseline. Its choices are made by one piece of code over two evaluations of the
// schedule: the incremental GreedyState (what runs) and a full Rewrite + memory model per step
// (evaluate.cpp's Evaluate, the reference the tests compare it with).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/types.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {

// The reference evaluation, read through the same queries as GreedyState.
class ReferenceView {
 public:
  explicit ReferenceView(Evaluated e) : e_(std::move(e)) {
    position_.resize(e_.rewritten.graph.ops.size());
    for (size_t s = 0; s < e_.rewritten.order.size(); ++s)
      position_[U(e_.rewritten.order[s])] = static_cast<Step>(s);
  }
  Bytes Peak() const { return e_.peak; }
  Step PeakStep() const { return e_.peak_step; }
  double RecomputeCost() const { return e_.recompute_cost; }
  OpId OriginAt(Step s) const { return e_.rewritten.origin[U(Op(s))]; }
  std::span<const TensorId> InputsAt(Step s) const { return G().ops[U(Op(s))].inputs; }
  std::span<const TensorId> OutputsAt(Step s) const { return G().ops[U(Op(s))].outputs; }
  int StorageOf(int value) const { return e_.model.storage_of[U(value)]; }
  Step ProducerStep(int value) const {
    const OpId p = G().tensors[U(value)].producer;
    return p == kNoOp ? -1 : position_[U(p)];
  }
  OpId ProducerOrigin(int value) const {
    const OpId p = G().tensors[U(value)].producer;
    return p == kNoOp ? kNoOp : e_.rewritten.origin[U(p)];
  }
  template <class F>
  void ForEachReaderStep(int value, F f) const {
    for (OpId c : G().tensors[U(value)].consumers) f(position_[U(c)]);
  }
  int NumStorages() const { return static_cast<int>(e_.model.storages.size()); }
  bool Planned(int sid) const { return e_.model.storages[U(sid)].planned(); }
  bool Output(int sid) const { return e_.model.storages[U(sid)].output; }
  Bytes Size(int sid) const { return e_.model.storages[U(sid)].size; }
  Step Start(int sid) const { return e_.lifetimes[U(sid)].start; }
  Step End(int sid) const { return e_.lifetimes[U(sid)].end; }
  std::span<const TensorId> Members(int sid) const { return e_.model.storages[U(sid)].members; }

 private:
  const Graph& G() const { return e_.rewritten.graph; }
  OpId Op(Step s) const { return e_.rewritten.order[U(s)]; }
  Evaluated e_;
  std::vector<Step> position_;
};

// The evictions possible at step sp (the peak step, for the greedy), best first (ties broken
// by where and what, so that the order does not depend on how either evaluation numbers its
// storages).
//
// With `hold`, an eviction whose chain recomputes inputs freed before the peak is also offered
// as the producers' copies alone, those inputs held until the copies run (their bytes counted
// against what it frees): MOCCASIN's retention decision, for a large storage made from small
// inputs that died long before, where the chain back from them is what blocks the descent.
template <class View>
std::vector<Candidate> Candidates(View& v, const std::vector<double>& costs, const OpFlags& flags,
                                  const RematParams& params, Step sp, bool hold = false) {
  const std::vector<char>& recomputable = flags.recomputable;
  const bool lifetime_weighted = params.greedy.score == "lifetime";
  const bool log_weighted = params.greedy.score == "log";
  std::vector<int> touched_now;
  for (int x : v.InputsAt(sp)) touched_now.push_back(v.StorageOf(x));
  for (int x : v.OutputsAt(sp)) touched_now.push_back(v.StorageOf(x));
  std::vector<Candidate> candidates;
  for (int sid = 0; sid < v.NumStorages(); ++sid) {
    if (!v.Planned(sid) || v.Output(sid) || v.Start(sid) > sp || v.End(sid) <= sp) continue;
    if (std::find(touched_now.begin(), touched_now.end(), sid) != touched_now.end()) continue;
    // The steps that use the storage: the last before the peak and the first after it.
    Step prev = v.Start(sid), next = std::numeric_limits<Step>::max();
    std::vector<Step> made_at;  // the steps of its producers before the peak
    bool ok = true;
    for (int value : v.Members(sid)) {
      const Step p = v.ProducerStep(value);
      if (p < sp) {
        if (!recomputable[U(v.ProducerOrigin(value))]) ok = false;
        made_at.push_back(p);
      } else {
        next = std::min(next, p);
      }
      v.ForEachReaderStep(value, [&](Step s) {
        if (s < sp) prev = std::max(prev, s);
        if (s > sp) next = std::min(next, s);
      });
    }
    if (!ok || next == std::numeric_limits<Step>::max()) continue;
    std::sort(made_at.begin(), made_at.end());
    made_at.erase(std::unique(made_at.begin(), made_at.end()), made_at.end());
    // Offers the eviction whose copies run `steps` and, for inputs freed before the peak, their
    // producers while the chain has fewer than `chain_limit` ops; says whether it chained.
    auto offer = [&](std::vector<Step> steps, int chain_limit) {
      const size_t producers = steps.size();
      // The copies' inputs must be alive when the copies run. An input whose storage is not
      // live at the peak would now have to cross it: recompute its producer too (a chain, up
      // to greedy_max_chain ops), or, where that is not possible, count its bytes against
      // what the candidate frees.
      std::vector<int> extended;
      std::vector<std::pair<Step, int>> inputs;  // (producer step, storage), in a fixed order
      for (size_t i = 0; i < steps.size(); ++i) {
        inputs.clear();
        for (int in : v.InputsAt(steps[i])) {
          const int q = v.StorageOf(in);
          if (q == sid || !v.Planned(q) || v.End(q) >= sp) continue;
          inputs.emplace_back(v.ProducerStep(in), q);
        }
        std::sort(inputs.begin(), inputs.end());
        for (auto [ps, q] : inputs) {
          if (std::find(steps.begin(), steps.end(), ps) != steps.end()) continue;
          if (static_cast<int>(steps.size()) < chain_limit && recomputable[U(v.OriginAt(ps))])
            steps.push_back(ps);
          else
            extended.push_back(q);
        }
      }
      std::sort(steps.begin(), steps.end());
      // Where the copies run: right before the next use, unless a storage they read from
      // outside the chain is overwritten in place before it (an optimizer step interleaved with
      // the backward updates a weight the copies read); then right before the first such write
      // after the peak, which still frees the bytes at the peak.
      Step at = next;
      if (params.greedy.copy_before_writes)
        for (Step p : steps)
          for (int in : v.InputsAt(p)) {
            if (std::binary_search(steps.begin(), steps.end(), v.ProducerStep(in))) continue;
            const auto members = v.Members(v.StorageOf(in));
            for (size_t m = 1; m < members.size(); ++m) {
              const OpId writer = v.ProducerOrigin(members[m]);
              if (writer == kNoOp || !flags.in_place[U(writer)]) continue;
              const Step w = v.ProducerStep(members[m]);
              if (w > sp && w < at) at = w;
            }
          }
      double cost = 0;
      for (Step p : steps) cost += costs[U(v.OriginAt(p))];
      std::sort(extended.begin(), extended.end());
      extended.erase(std::unique(extended.begin(), extended.end()), extended.end());
      Bytes penalty = 0;
      for (int q : extended) penalty += v.Size(q);
      // The copies recompute every output of their ops, and the readers after `next` move to
      // them: another storage made only by the chain and not used between the peak and `next`
      // is freed at the peak too, at no extra cost (a dropout's mask with its output, a layer
      // norm's statistics with its result).
      Bytes also = 0;
      if (params.greedy.count_siblings) {
        std::vector<int> others;
        for (Step p : steps)
          for (int out : v.OutputsAt(p)) {
            const int q = v.StorageOf(out);
            if (q == sid || !v.Planned(q) || v.Output(q) || v.Start(q) > sp || v.End(q) <= sp)
              continue;
            if (std::find(touched_now.begin(), touched_now.end(), q) != touched_now.end()) continue;
            others.push_back(q);
          }
        std::sort(others.begin(), others.end());
        others.erase(std::unique(others.begin(), others.end()), others.end());
        for (int q : others) {
          bool freed = true;
          for (int value : v.Members(q)) {
            const Step p = v.ProducerStep(value);
            if (std::find(steps.begin(), steps.end(), p) == steps.end()) freed = false;
            v.ForEachReaderStep(value, [&](Step r) {
              if (r > sp && r < at) freed = false;
            });
          }
          if (freed) also += v.Size(q);
        }
      }
      const Bytes net = v.Size(sid) + also - penalty;
      const bool chained = steps.size() > producers;
      if (net <= 0) return chained;
      Candidate c;
      const double span = lifetime_weighted ? static_cast<double>(at - prev)
                          : log_weighted    ? std::log(static_cast<double>(at - prev) + 1.0)
                                            : 1.0;
      c.score = static_cast<double>(net) * span / std::max(cost, 1e-9);
      c.cost = cost;
      c.at = at;
      for (Step p : steps) c.ops.push_back(v.OriginAt(p));
      candidates.push_back(std::move(c));
      return chained;
    };
    if (offer(made_at, params.greedy.max_chain) && hold) offer(made_at, 0);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.at != b.at) return a.at < b.at;
    return a.ops < b.ops;
  });
  return candidates;
}

// s without its steps [at, at + k): the trials of the prune and the swap search.
Schedule Without(const Schedule& s, size_t at, size_t k) {
  Schedule out = s;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(at),
            out.begin() + static_cast<std::ptrdiff_t>(at + k));
  return out;
}

// The full evaluation per step.
struct ReferenceEngine {
  const Graph& graph;
  const RematParams& params;
  Schedule schedule;
  std::optional<ReferenceView> view;

  void Load(Schedule s) {
    schedule = std::move(s);
    view.emplace(Evaluate(graph, schedule, params));
  }
  // Loads s without its steps [at, at + k); false when that is not valid.
  bool TryLoadWithout(const Schedule& s, size_t at, size_t k) {
    Schedule trial = Without(s, at, k);
    if (!CheckSchedule(graph, trial, params.rule).empty()) return false;
    Load(std::move(trial));
    return true;
  }
  ReferenceView& View() { return *view; }
  bool Apply(Step at, const std::vector<OpId>& ops) {
    Schedule next = schedule;
    next.insert(next.begin() + at, ops.begin(), ops.end());
    if (!CheckSchedule(graph, next, params.rule).empty()) return false;
    Load(std::move(next));
    return true;
  }
  const Schedule& Current() const { return schedule; }
  // The peak of s without its steps [at, at + k), or nothing when that is not valid.
  std::optional<Bytes> TrialWithout(const Schedule& s, size_t at, size_t k) const {
    const Schedule trial = Without(s, at, k);
    if (!CheckSchedule(graph, trial, params.rule).empty()) return std::nullopt;
    return Evaluate(graph, trial, params).peak;
  }
};

// The prune's trials, each a schedule minus one run of copies, on one incremental state: the
// run is removed from the state (after putting back what the trial before removed, when that
// one was not kept) instead of the state being rebuilt for every trial.
class RemovalTrials {
 public:
  explicit RemovalTrials(GreedyState* state) : state_(state) {}

  // The peak of s without its steps [at, at + k), or nothing when that is not valid.
  std::optional<Bytes> TrialWithout(const Schedule& s, size_t at, size_t k) {
    if (!Holds(s)) {
      valid_ = state_->Reset(s);
      if (!valid_) return TrialOf(s, at, k);
    }
    removed_at_ = static_cast<Step>(at);
    removed_.assign(s.begin() + static_cast<std::ptrdiff_t>(at),
                    s.begin() + static_cast<std::ptrdiff_t>(at + k));
    if (state_->Remove(removed_at_, static_cast<Step>(k))) return state_->Peak();
    return TrialOf(s, at, k);  // not a run of copies, or an invalid schedule
  }

  // Someone else changed the state.
  void Forget() {
    valid_ = false;
    removed_.clear();
  }

 private:
  // Whether the state holds s, once the last trial's run is put back where s is not it.
  bool Holds(const Schedule& s) {
    if (!valid_) return false;
    if (state_->schedule() == s) {
      removed_.clear();
      return true;
    }
    if (removed_.empty()) return false;
    valid_ = state_->Insert(removed_at_, removed_);
    removed_.clear();
    return valid_ && state_->schedule() == s;
  }
  // The full rebuild.
  std::optional<Bytes> TrialOf(const Schedule& s, size_t at, size_t k) {
    removed_.clear();
    valid_ = state_->Reset(Without(s, at, k));
    if (!valid_) return std::nullopt;
    return state_->Peak();
  }

  GreedyState* state_;
  bool valid_ = false;
  Step removed_at_ = 0;
  std::vector<OpId> removed_;
};

// The incremental evaluation.
struct IncrementalEngine {
  IncrementalEngine(GreedyState main, GreedyState spare)
      : state(std::move(main)), scratch(std::move(spare)) {}
  IncrementalEngine(const IncrementalEngine&) = delete;
  IncrementalEngine& operator=(const IncrementalEngine&) = delete;

  GreedyState state;
  GreedyState scratch;  // the prune's trials, or the swap search's schedule
  RemovalTrials trials{&scratch};
  bool swap_base = false;  // scratch holds the swap search's schedule (not the prune's)

  void Load(const Schedule& s) {
    if (!state.Reset(s)) throw std::logic_error("greedy: invalid start schedule");
  }
  // The swap search's attempts, all on one schedule until one is kept: the state is assigned
  // from scratch holding s and the run removed, rather than rebuilt per attempt.
  bool TryLoadWithout(const Schedule& s, size_t at, size_t k) {
    trials.Forget();
    if (!swap_base || scratch.schedule() != s) swap_base = scratch.Reset(s);
    if (swap_base) {
      state = scratch;
      if (state.Remove(static_cast<Step>(at), static_cast<Step>(k))) return true;
    }
    return state.Reset(Without(s, at, k));  // not a run of copies, or an invalid schedule
  }
  GreedyState& View() { return state; }
  bool Apply(Step at, const std::vector<OpId>& ops) {
    if (!state.CanInsert(at, ops)) return false;
    Schedule before = state.schedule();
    if (state.Insert(at, ops)) return true;
    state.Reset(before);
    return false;
  }
  const Schedule& Current() const { return state.schedule(); }
  std::optional<Bytes> TrialWithout(const Schedule& s, size_t at, size_t k) {
    swap_base = false;
    return trials.TrialWithout(s, at, k);
  }
};

// Evictions made early for one peak may be unnecessary once later ones reshaped the profile:
// drop recomputations, most expensive first, while the schedule stays within the budget.
template <class Engine>
void Prune(const Graph& graph, const std::vector<double>& costs, Bytes budget,
           const RematParams& params, Engine& engine, MethodResult& result) {
  std::vector<std::pair<double, size_t>> repeats = RepeatsDearestFirst(result.schedule, costs);
  if (static_cast<int>(repeats.size()) > params.greedy.prune_attempts)
    repeats.resize(static_cast<size_t>(params.greedy.prune_attempts));
  std::vector<size_t> removed;  // positions already dropped, to shift the later ones
  for (const auto& [cost, position] : repeats) {
    if (cost <= 0) break;
    size_t shift = 0;
    for (size_t r : removed) shift += r < position ? 1 : 0;
    const size_t at = position - shift;
    std::optional<Bytes> peak = engine.TrialWithout(result.schedule, at, 1);
    if (!peak || *peak > budget) continue;
    result.schedule.erase(result.schedule.begin() + static_cast<std::ptrdiff_t>(at));
    result.peak = *peak;
    removed.push_back(position);
  }
  result.recompute_cost = RecomputeCost(graph, result.schedule);
}

// A local search on a schedule within the budget: drop one run of copies (dearest first) and
// let the greedy repair the peak this raises with recomputations that cost less in all than
// the run did; keep the result when it fits. The greedy's early evictions were chosen for
// the peak of the moment, and once later ones reshaped the profile, cheaper copies elsewhere
// may free as much where it matters.
template <class Engine>
void Swap(const Graph& graph, const std::vector<double>& costs, const OpFlags& flags, Bytes budget,
          const RematParams& params, Engine& work, MethodResult& result,
          const Deadline* deadline = nullptr) {
  int attempts = 0;
  for (bool improved = true; improved && attempts < params.greedy.swap_attempts;) {
    if (deadline != nullptr && deadline->Expired()) break;
    improved = false;
    std::vector<CopyRun> runs = CopyRuns(graph, costs, result.schedule);
    std::stable_sort(runs.begin(), runs.end(),
                     [](const CopyRun& a, const CopyRun& b) { return a.cost > b.cost; });
    for (const CopyRun& run : runs) {
      if (run.cost <= 0 || attempts >= params.greedy.swap_attempts) break;
      ++attempts;
      if (!work.TryLoadWithout(result.schedule, run.begin, run.end - run.begin)) continue;
      double spent = 0;
      bool fits = false;
      for (int step = 0; step < params.greedy.swap_repair_steps; ++step) {
        auto& view = work.View();
        if (view.Peak() <= budget) {
          fits = true;
          break;
        }
        bool applied = false;
        for (const Candidate& c : Candidates(view, costs, flags, params, view.PeakStep())) {
          if (spent + c.cost >= run.cost) continue;
          if (work.Apply(c.at, c.ops)) {
            spent += c.cost;
            applied = true;
            break;
          }
        }
        if (!applied) break;
      }
      if (!fits && work.View().Peak() <= budget) fits = true;
      if (!fits) continue;
      const double cost = RecomputeCost(graph, work.Current());
      if (cost >= result.recompute_cost) continue;
      result.schedule = work.Current();
      result.peak = work.View().Peak();
      result.recompute_cost = cost;
      improved = true;
      break;
    }
  }
}

// hold_from_start: evictions that hold their freed inputs are offered from the first step
// (and the descent ends where it stalls), not only once the chains alone stalled.
template <class Engine>
std::vector<MethodResult> Descend(const Graph& graph, Schedule start,
                                  std::span<const Bytes> budgets, const RematParams& params,
                                  const std::vector<double>& costs, Engine& engine, Engine& work,
                                  const Deadline* deadline, bool hold_from_start) {
  const OpFlags flags = MakeOpFlags(graph, params);
  std::vector<MethodResult> results(budgets.size());
  MethodResult best;  // the lowest peak seen
  best.method = "greedy";
  best.status = Status::kInfeasible;
  best.peak = std::numeric_limits<Bytes>::max();
  size_t reached = 0;
  int stalled = 0;
  bool hold = hold_from_start;
  engine.Load(std::move(start));
  for (int iteration = 0;; ++iteration) {
    auto& view = engine.View();
    const Bytes peak = view.Peak();
    stalled = peak < best.peak ? 0 : stalled + 1;
    if (peak < best.peak) {
      best.peak = peak;
      best.schedule = engine.Current();
      best.recompute_cost = view.RecomputeCost();
    }
    for (; reached < budgets.size() && peak <= budgets[reached]; ++reached) {
      MethodResult& r = results[reached];
      r = best;
      r.status = Status::kFeasible;
      Prune(graph, costs, budgets[reached], params, engine, r);
      const double pruned = r.recompute_cost;
      Swap(graph, costs, flags, budgets[reached], params, work, r, deadline);
      if (r.recompute_cost < pruned) Prune(graph, costs, budgets[reached], params, engine, r);
    }
    if (reached == budgets.size()) break;
    if (iteration >= params.greedy.max_steps) break;
    if (deadline != nullptr && deadline->Expired()) break;
    bool applied = false;
    if (stalled <= params.greedy.stall_steps)
      for (const Candidate& c : Candidates(view, costs, flags, params, view.PeakStep(), hold))
        if (engine.Apply(c.at, c.ops)) {
          applied = true;
          break;
        }
    if (applied) continue;
    // The chains alone stopped lowering the peak: go on from the lowest one, now also offered
    // evictions that hold their freed inputs. Only here, so that every budget the chains reach
    // gets the plan it had without this.
    if (hold || !params.greedy.hold_inputs) break;
    hold = true;
    stalled = 0;
    engine.Load(best.schedule);
  }
  for (; reached < budgets.size(); ++reached) results[reached] = best;
  return results;
}

}  // namespace

std::vector<CopyRun> CopyRuns(const Graph& graph, const std::vector<double>& costs,
                              const Schedule& schedule) {
  std::vector<CopyRun> runs;
  std::vector<char> seen(U(graph.num_ops()), 0);
  for (size_t i = 0; i < schedule.size(); ++i) {
    const OpId op = schedule[i];
    if (seen[U(op)]) {
      if (runs.empty() || runs.back().end != i) runs.push_back({i, i, 0});
      runs.back().end = i + 1;
      runs.back().cost += costs[U(op)];
    }
    seen[U(op)] = 1;
  }
  return runs;
}

OpFlags MakeOpFlags(const Graph& graph, const RematParams& params) {
  OpFlags flags;
  flags.recomputable.resize(U(graph.num_ops()));
  flags.in_place.resize(U(graph.num_ops()));
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    flags.recomputable[U(op)] = IsRecomputable(graph, op, params.rule);
    flags.in_place[U(op)] = IsInPlaceWrite(graph, op);
  }
  return flags;
}

std::vector<Candidate> CandidatesAt(GreedyState& state, Step sp, const std::vector<double>& costs,
                                    const OpFlags& flags, const RematParams& params) {
  return Candidates(state, costs, flags, params, sp);
}

std::vector<MethodResult> GreedyDescent(const Graph& graph, Schedule start,
                                        std::span<const Bytes> budgets, const RematParams& params,
                                        GreedyEvaluation evaluation, const Deadline* deadline) {
  const std::vector<double> costs = OpCosts(graph);
  // Both descents where greedy.hold_descent asks, the better of the two kept for each budget.
  const bool both = params.greedy.hold_inputs && params.greedy.hold_descent;
  auto descend_both = [&](auto& engine, auto& work) {
    std::vector<MethodResult> results = Descend(graph, both ? start : std::move(start), budgets,
                                                params, costs, engine, work, deadline, false);
    if (!both) return results;
    std::vector<MethodResult> holding =
        Descend(graph, std::move(start), budgets, params, costs, engine, work, deadline, true);
    for (size_t i = 0; i < budgets.size(); ++i)
      if (Better(holding[i], results[i], budgets[i])) results[i] = std::move(holding[i]);
    return results;
  };
  if (evaluation == GreedyEvaluation::kReference) {
    ReferenceEngine engine{graph, params, {}, std::nullopt};
    ReferenceEngine work{graph, params, {}, std::nullopt};
    return descend_both(engine, work);
  }
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  IncrementalEngine engine{GreedyState(graph, model, costs, params.rule),
                           GreedyState(graph, model, costs, params.rule)};
  IncrementalEngine work{GreedyState(graph, model, costs, params.rule),
                         GreedyState(graph, model, costs, params.rule)};
  return descend_both(engine, work);
}

GreedyTools::GreedyTools(const Graph& graph, const RematParams& params)
    : model(BuildMemoryModel(graph, params.alignment)),
      costs(OpCosts(graph)),
      flags(MakeOpFlags(graph, params)),
      state(graph, model, costs, params.rule) {}

std::vector<std::pair<double, size_t>> RepeatsDearestFirst(std::span<const OpId> schedule,
                                                           const std::vector<double>& costs) {
  std::vector<std::pair<double, size_t>> repeats;  // (cost, position)
  std::vector<char> seen(costs.size(), 0);
  for (size_t i = 0; i < schedule.size(); ++i) {
    const OpId op = schedule[i];
    if (seen[U(op)]) repeats.emplace_back(costs[U(op)], i);
    seen[U(op)] = 1;
  }
  std::stable_sort(repeats.begin(), repeats.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  return repeats;
}

void PruneRepeats(const Graph& graph, const std::vector<double>& costs, Bytes budget,
                  const RematParams& params, GreedyState& scratch, MethodResult& result) {
  RemovalTrials engine(&scratch);
  Prune(graph, costs, budget, params, engine, result);
}

MethodResult Polish(const Graph& graph, MethodResult result, Bytes budget,
                    const RematParams& params) {
  if (result.peak > budget) return result;
  const std::vector<double> costs = OpCosts(graph);
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  const OpFlags flags = MakeOpFlags(graph, params);
  IncrementalEngine engine{GreedyState(graph, model, costs, params.rule),
                           GreedyState(graph, model, costs, params.rule)};
  IncrementalEngine work{GreedyState(graph, model, costs, params.rule),
                         GreedyState(graph, model, costs, params.rule)};
  engine.Load(result.schedule);
  Prune(graph, costs, budget, params, engine, result);
  const double pruned = result.recompute_cost;
  Swap(graph, costs, flags, budget, params, work, result);
  if (result.recompute_cost < pruned) Prune(graph, costs, budget, params, engine, result);
  return result;
}

MethodResult Greedy(const Graph& graph, Schedule start, Bytes budget, const RematParams& params,
                    GreedyEvaluation evaluation, const Deadline* deadline) {
  const Bytes budgets[] = {budget};
  return GreedyDescent(graph, std::move(start), budgets, params, evaluation, deadline).front();
}

}  // namespace roam::remat::detail
