// The lookahead method (docs/remat.md, "The lookahead method"): the base order is executed in
// a simulation of MOCCASIN's value model (values.h) under a byte target. Before each
// computation that would not fit, the simulation drops held values, the one with the least
// rebuild cost per byte freed and per step until its next need first (the base order tells
// the future, as Belady's rule uses it); a computation whose input was dropped recomputes it
// first, recursively. Where nothing is left to drop, the simulation is rerun holding the
// dropped inputs of the value that would then free most (a hint: the decision, at the step
// those inputs would die, that a drop at the peak cannot make). A portfolio of scores and
// targets is simulated, each schedule is checked by roam's own memory model, and the cheapest
// within budget is refined by forbidding, one at a time, the drops of the ops it recomputes
// most expensively.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "core/deadline.h"
#include "core/types.h"
#include "remat/internal.h"
#include "remat/values.h"

namespace roam::remat::detail {
namespace {
constexpr int kNever = std::numeric_limits<int>::max();
// Levels of values not held that one recomputation may rebuild (the dropped value itself is
// one): deeper chains reach back to the start of these graphs and cost more than they free.
constexpr int kMaxDepth = 4;

// What the simulation may drop: recomputable values whose every dependency may be dropped too
// (or, with whole_graph, is a graph output, held to the end), so that a recomputation never
// needs a value that is gone for good, and whose inputs are never written in place (with
// whole_graph, not before the recomputation: RebuildCost checks each drop).
std::vector<char> Droppable(const Values& v, bool whole_graph) {
  std::vector<char> d(U(v.n), 0);
  for (int p = 0; p < v.n; ++p) {
    bool ok =
        v.recomputable[U(p)] && !v.output[U(p)] && (whole_graph || v.write_limit[U(p)] == v.n);
    for (int q : v.deps[U(p)])
      ok = ok && (d[U(q)] || v.keep[U(q)] <= 0 || (whole_graph && v.output[U(q)]));
    d[U(p)] = ok;
  }
  return d;
}

// until^exponent; the exponents 0, 1 and 2 exactly and without a call (until is a step count,
// so its square is exact, as pow's is).
double Power(double until, double exponent) {
  if (exponent == 1) return until;
  if (exponent == 0) return 1;
  if (exponent == 2) return until * until;
  return std::pow(until, exponent);
}

struct Variant {
  double exponent = 1;  // of the steps until the next use in the score
  double target = 0;    // simulated bytes that may be held
  // A value a hint holds may not be dropped before the hint's stage (else it is only needed
  // then, and may be dropped at its rebuild cost like any other).
  bool firm_hints = false;
};

class Simulation {
 public:
  Simulation(const Values& v, const std::vector<char>& droppable, const std::vector<char>& protect,
             const Variant& variant, int max_computations,
             const std::vector<std::pair<int, int>>& holds)
      : v_(v),
        droppable_(droppable),
        protect_(protect),
        variant_(variant),
        max_computations_(max_computations) {
    users_.resize(U(v.n));
    last_use_.assign(U(v.n), -1);
    for (int p = 0; p < v.n; ++p) {
      users_[U(p)] = v.users[U(p)];
      std::sort(users_[U(p)].begin(), users_[U(p)].end());
      if (!users_[U(p)].empty()) last_use_[U(p)] = users_[U(p)].back();
      if (v.output[U(p)]) last_use_[U(p)] = kNever;
    }
    next_.assign(U(v.n), 0);
    resident_.assign(U(v.n), 0);
    pins_.assign(U(v.n), 0);
    slot_.assign(U(v.n), -1);
    pending_.assign(U(v.n), {});
    waited_on_.assign(U(v.n), {});
    seen_.assign(U(v.n), 0);
    hold_until_.assign(U(v.n), -1);
    for (const auto& [q, until] : holds) {
      pending_[U(q)].emplace_back(until, -1);
      hold_until_[U(q)] = std::max(hold_until_[U(q)], until);
    }
    computations.assign(U(v.n), 0);
  }

  // Runs the base order; false when a computation could not be made (too many computations).
  bool Run() {
    for (stage_ = 0; stage_ < v_.n; ++stage_) {
      if (!Compute(stage_)) return false;
      // Values no later original reads are dropped at the end of the stage (recomputations
      // made for this stage are kept through it).
      for (size_t i = 0; i < held_.size();) {
        const int p = held_[i];
        // A value that is not droppable is read by no recomputation, so it may go too.
        if (NextUse(p) == kNever && !v_.output[U(p)] && pins_[U(p)] == 0)
          Release(p);
        else
          ++i;
      }
    }
    return true;
  }

  Schedule schedule;
  int stuck_stage = -1;                   // the first stage where no drop was left
  std::vector<std::pair<int, int>> hint;  // (value, stage): hold it to then (see Stuck)
  double peak = 0;                // the simulated peak: held bytes plus the bytes being made
  std::vector<int> computations;  // per position

 private:
  // The first need at or after the current stage: an original reader, or a pending
  // recomputation of a dropped reader (kNever: none).
  int NextUse(int p) {
    if (v_.output[U(p)]) return kNever - 1;
    auto& u = users_[U(p)];
    size_t& i = next_[U(p)];
    while (i < u.size() && u[i] < stage_) ++i;
    int next = i < u.size() ? u[i] : kNever;
    for (const auto& [at, owner] : pending_[U(p)])
      if (at >= stage_) next = std::min(next, at);
    return next;
  }
  // The last need known now.
  int LastNeed(int p) const {
    int last = last_use_[U(p)];
    for (const auto& [at, owner] : pending_[U(p)]) last = std::max(last, at);
    return last;
  }

  void Hold(int p) {
    resident_[U(p)] = 1;
    if (v_.keep[U(p)] <= 0) return;
    held_bytes_ += v_.keep[U(p)];
    slot_[U(p)] = static_cast<int>(held_.size());
    held_.push_back(p);
  }
  void Release(int p) {
    resident_[U(p)] = 0;
    // Its views alias the storage released: a reader through one needs it made again.
    for (int w : v_.views[U(p)]) resident_[U(w)] = 0;
    held_bytes_ -= v_.keep[U(p)];
    const int s = slot_[U(p)];
    held_[U(s)] = held_.back();
    slot_[U(held_[U(s)])] = s;
    held_.pop_back();
    slot_[U(p)] = -1;
  }
  // Drops p; when it is needed again at next, the held values its rebuild reads (boundary_,
  // as RebuildCost left it for p) are needed then too.
  void Drop(int p, int next) {
    Release(p);
    if (next == kNever) return;
    for (int q : boundary_) {
      pending_[U(q)].emplace_back(next, p);
      waited_on_[U(p)].push_back(q);
    }
  }

  // The cost of computing p again at its next need next, with what it reads that will not be
  // held then, each value once: values not held now, and with rebuild_dying, held values no
  // need keeps until next (else those are held until next, less bytes freed). Infinite when
  // that reaches deeper than depth levels: a chain back to the graph's start is never worth
  // it. Fills boundary_ with the held values the rebuild reads.
  double RebuildCost(int p, int next, bool rebuild_dying, int depth) {
    ++stamp_;
    double c = 0;
    frontier_.assign(1, p);
    boundary_.clear();
    seen_[U(p)] = stamp_;
    for (int level = 0; !frontier_.empty(); ++level) {
      if (level == depth) return std::numeric_limits<double>::infinity();
      next_frontier_.clear();
      for (int x : frontier_) {
        // A copy made at next would read what an in-place write has since overwritten.
        if (v_.write_limit[U(x)] <= next) return std::numeric_limits<double>::infinity();
        c += v_.cost[U(x)];
        for (int q : v_.deps[U(x)]) {
          if (v_.keep[U(q)] <= 0 || seen_[U(q)] == stamp_) continue;
          seen_[U(q)] = stamp_;
          const bool rebuild =
              !resident_[U(q)] || (rebuild_dying && droppable_[U(q)] && LastNeed(q) < next);
          (rebuild ? next_frontier_ : boundary_).push_back(q);
        }
      }
      std::swap(frontier_, next_frontier_);
    }
    return c;
  }

  // Where no drop is left: the held value that would free most if what its recomputation
  // reads, dropped already, had been held to its next need; hint says to hold those.
  void Stuck() {
    stuck_stage = stage_;
    double best_net = -std::numeric_limits<double>::infinity();
    for (int p : held_) {
      if (pins_[U(p)] > 0 || !droppable_[U(p)] || protect_[U(p)]) continue;
      const int next = NextUse(p);
      if (next == kNever) continue;
      double net = v_.keep[U(p)];
      std::vector<std::pair<int, int>> missing;
      for (int q : v_.deps[U(p)])
        if (v_.keep[U(q)] > 0 && !resident_[U(q)]) {
          net -= v_.keep[U(q)];
          missing.emplace_back(q, next);
        }
      if (!missing.empty() && net > best_net) {
        best_net = net;
        hint = std::move(missing);
      }
    }
  }

  // p is computed again: the needs its drop put on what it reads are met.
  void Recomputed(int p) {
    for (int q : waited_on_[U(p)]) {
      auto& n = pending_[U(q)];
      n.erase(std::remove_if(n.begin(), n.end(), [&](const auto& e) { return e.second == p; }),
              n.end());
    }
    waited_on_[U(p)].clear();
  }

  // The held value to drop: a value nothing needs again first, else the least estimated
  // rebuild cost (RebuildCost) per byte it frees (its own, less the held values its rebuild
  // keeps beyond their last need) and per step (to the power exponent) until its next need;
  // of holding or rebuilding the values that would die before, the better; ties to the first
  // in held_. Leaves boundary_ as the choice needs it. -1: none.
  int Victim() {
    candidates_.clear();
    for (size_t i = 0; i < held_.size(); ++i) {
      const int p = held_[i];
      if (pins_[U(p)] > 0 || !droppable_[U(p)] || protect_[U(p)]) continue;
      if (variant_.firm_hints && hold_until_[U(p)] >= stage_) continue;  // a hint holds it
      const int next = NextUse(p);
      if (next == kNever) {
        boundary_.clear();
        return p;
      }
      const auto until = static_cast<double>(next - stage_ + 1);
      const double steps = Power(until, variant_.exponent);
      // A rebuild costs at least p's own computation and frees at most p's bytes, and
      // rounding is monotone, so this bounds both of p's scores below.
      candidates_.push_back(
          {v_.cost[U(p)] / (v_.keep[U(p)] * steps), static_cast<int>(i), next, steps});
    }
    // Walked in the order of their bounds, the rebuilds stop where no bound can beat the best:
    // the same choice as walking every one in held_'s order, in a fraction of the walks.
    std::sort(candidates_.begin(), candidates_.end(),
              [](const DropCandidate& a, const DropCandidate& b) {
                return a.bound < b.bound || (a.bound == b.bound && a.index < b.index);
              });
    int best = -1, best_index = 0;
    bool best_dying = false;
    double best_score = std::numeric_limits<double>::infinity();
    auto beats = [&](double score, int index) {
      return score < best_score || (score == best_score && index < best_index);
    };
    for (const DropCandidate& c : candidates_) {
      if (!beats(c.bound, c.index)) {
        if (c.bound > best_score) break;
        continue;
      }
      const int p = held_[U(c.index)];
      bool same_when_dying = false;
      for (bool dying : {false, true}) {
        if (dying && same_when_dying) break;
        const double cost = RebuildCost(p, c.next, dying, kMaxDepth);
        if (std::isinf(cost)) continue;
        double bytes = v_.keep[U(p)];
        // Rebuilding the dying values too walks the same values unless one of them is held
        // and droppable: the second pass would only repeat the first.
        bool rebuilds_more = false;
        for (int q : boundary_)
          if (LastNeed(q) < c.next) {
            bytes -= v_.keep[U(q)];
            rebuilds_more = rebuilds_more || droppable_[U(q)];
          }
        same_when_dying = !rebuilds_more;
        if (bytes <= 0) continue;
        const double score = cost / (bytes * c.steps);
        if (beats(score, c.index)) {  // of p's own two scores, the first wins a tie
          best_score = score;
          best = p;
          best_index = c.index;
          best_dying = dying;
        }
      }
    }
    if (best >= 0)
      RebuildCost(best, NextUse(best), best_dying, kMaxDepth);
    else
      boundary_.clear();
    return best;
  }

  bool Compute(int k) {
    if (++total_ > max_computations_) return false;
    const auto& deps = v_.deps[U(k)];
    for (int q : deps) {
      if (!resident_[U(q)]) {
        // Only droppable values are ever dropped, and their dependencies are droppable too.
        if (!Compute(q)) return false;
      }
      ++pins_[U(q)];
    }
    while (held_bytes_ + v_.all[U(k)] > variant_.target) {
      const int p = Victim();
      if (p < 0) {
        if (stuck_stage < 0) Stuck();
        break;
      }
      Drop(p, NextUse(p));
    }
    peak = std::max(peak, held_bytes_ + v_.all[U(k)]);
    schedule.push_back(v_.op[U(k)]);
    if (++computations[U(k)] > 1) Recomputed(k);
    Hold(k);
    for (int q : deps) --pins_[U(q)];
    return true;
  }

  const Values& v_;
  const std::vector<char>& droppable_;
  const std::vector<char>& protect_;
  Variant variant_;
  int max_computations_;
  std::vector<std::vector<int>> users_;
  std::vector<int> last_use_;
  std::vector<size_t> next_;
  std::vector<char> resident_;
  std::vector<int> pins_;
  std::vector<int> held_, slot_;
  // Per value: (stage, dropped reader) for each dropped reader whose recomputation needs it.
  std::vector<std::vector<std::pair<int, int>>> pending_;
  std::vector<std::vector<int>> waited_on_;  // per dropped value: the values its drop put needs on
  std::vector<int> hold_until_;              // per value: the last stage a hint holds it to
  double held_bytes_ = 0;
  int stage_ = 0;
  std::vector<int> seen_, frontier_, next_frontier_, boundary_;  // RebuildCost's search
  struct DropCandidate {
    double bound;  // below both of its scores
    int index;     // in held_
    int next;      // its next need
    double steps;  // the score's divisor per byte
  };
  std::vector<DropCandidate> candidates_;  // Victim's
  int stamp_ = 0;
  int total_ = 0;
};

struct Candidate {
  MethodResult result;
  std::vector<int> computations;  // per position
};

}  // namespace

MethodResult Lookahead(const Graph& graph, const Schedule& start, Bytes budget,
                       const RematParams& params, const Deadline& deadline) {
  const Values v = BuildValues(graph, start, params, params.lookahead.whole_graph);
  const std::vector<char> droppable = Droppable(v, params.lookahead.whole_graph);
  const int max_computations = std::max(1, params.lookahead.max_computations_factor) * v.n;

  MethodResult best;
  best.method = "lookahead";
  best.status = Status::kInfeasible;
  best.schedule = start;
  {
    const Evaluated e = Evaluate(graph, start, params);
    best.peak = e.peak;
    best.recompute_cost = 0;
  }
  if (best.peak <= budget) {
    best.status = Status::kFeasible;
    return best;
  }
  std::vector<int> best_computations(U(v.n), 1);

  // One simulation, checked by roam's memory model; a target the model finds exceeded is
  // lowered by the excess and the simulation rerun (bytes the values do not model: graph
  // inputs in the arena, views).
  std::vector<char> protect(U(v.n), 0);
  auto attempt = [&](Variant variant) -> std::optional<Candidate> {
    std::optional<Candidate> lowest;
    std::vector<std::pair<int, int>> holds;
    for (int retry = 0, hints = 0; retry <= params.lookahead.target_retries;) {
      // Past the plan's deadline, no further simulation: on 11k ops each costs tens of ms.
      if (lowest && deadline.Expired()) return lowest;
      Simulation sim(v, droppable, protect, variant, max_computations, holds);
      if (!sim.Run()) return lowest;
      // A hint already held reruns the same simulation: its stuck point did not move.
      auto held = [&](const std::pair<int, int>& h) {
        return std::find(holds.begin(), holds.end(), h) != holds.end();
      };
      if (sim.peak > variant.target && !sim.hint.empty() &&
          !std::all_of(sim.hint.begin(), sim.hint.end(), held) &&
          hints++ < params.lookahead.hints) {
        holds.insert(holds.end(), sim.hint.begin(), sim.hint.end());
        continue;
      }
      ++retry;
      if (!CheckSchedule(graph, sim.schedule, params.rule).empty()) return lowest;
      const Evaluated e = Evaluate(graph, sim.schedule, params);
      Candidate c;
      c.result.method = "lookahead";
      c.result.schedule = std::move(sim.schedule);
      c.result.peak = e.peak;
      c.result.recompute_cost = e.recompute_cost;
      c.result.status = e.peak <= budget ? Status::kFeasible : Status::kInfeasible;
      c.computations = std::move(sim.computations);
      if (!lowest || c.result.peak < lowest->result.peak) lowest = c;
      if (e.peak <= budget) return c;
      if (sim.peak > variant.target) return lowest;  // the simulation itself could not fit
      variant.target -= static_cast<double>(e.peak - budget);
    }
    return lowest;
  };
  auto consider = [&](std::optional<Candidate> c) {
    if (c && Better(c->result, best, budget)) {
      best = std::move(c->result);
      best_computations = std::move(c->computations);
      return true;
    }
    return false;
  };

  // The portfolio: scores that weigh the steps until the next use differently, and targets
  // above the budget (the simulation holds values to the end of their stage, roam frees them
  // at their last read, so a schedule may fit the budget with a simulated peak above it).
  Variant best_variant;
  const auto b = static_cast<double>(budget);
  std::vector<Variant> variants;
  for (bool firm : {false, true})
    for (double slack : params.lookahead.target_slacks)
      for (double exponent : params.lookahead.exponents)
        variants.push_back(Variant{exponent, b * (1 + slack), firm});
  for (const Variant& variant : variants) {
    if (deadline.Expired()) break;  // the best so far, fitting or not
    if (consider(attempt(variant))) best_variant = variant;
  }
  if (best.peak > budget) return best;

  // Refinement: forbid dropping the op whose recomputations cost most, then the next, keeping
  // each protection that leaves a cheaper schedule within budget.
  std::vector<int> tried(U(v.n), 0);
  for (int a = 0; a < params.lookahead.refine_attempts && !deadline.Expired(); ++a) {
    int pick = -1;
    double pick_cost = 0;
    for (int p = 0; p < v.n; ++p) {
      const double c = (best_computations[U(p)] - 1) * v.cost[U(p)];
      if (!tried[U(p)] && !protect[U(p)] && c > pick_cost) {
        pick = p;
        pick_cost = c;
      }
    }
    if (pick < 0) break;
    tried[U(pick)] = 1;
    protect[U(pick)] = 1;
    if (!consider(attempt(best_variant))) protect[U(pick)] = 0;
  }
  return best;
}

}  // namespace roam::remat::detail
