// The in-order lower bound (bound.h InOrderLowerBound, docs/remat.md "The in-order lower
// bound").
//
// Why it holds: in a schedule whose original computations follow `order`, the t-th original
// runs at a step of its own, and every planned storage the base order holds live there (made
// at or before t, touched at or after t) is, at that step, either resident (the original or a
// copy of it, the same bytes) or made again after it by a copy of its root's producer, before
// the next original that touches it. A storage touched at t, or a graph output (never
// recomputed), is resident. So at each step where the base order's live bytes exceed the
// budget (a row), the storages evicted there free at least the excess, and a (storage, gap
// between two of its touches) evicted at some row of the gap needs a copy of its producer
// after that row and before the gap ends: in the window from the gap's first row on. Copies
// are counted per op and window, so one copy serves every window it lies in and none is
// counted twice.
//
// The copy's inputs (input_levels): an input the order has freed before the gap's first row is
// resident at the copy, so either it is resident at that row (held, or made before it: its bytes
// count there against the excess) or a copy of its producer runs after that row, within the
// window, before the copy that reads it; and so on for that copy's inputs, to input_levels
// levels. Reading any real schedule this way gives a point of the model at no more cost, so the
// model's least cost bounds the schedule's. Deeper inputs, the copies' working memory,
// a hold's bytes at rows other than the gap's first, and the steps between originals are left
// out, which is why it bounds and does not plan.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/memory_model.h"
#include "ilp/glpk.h"
#include "ilp/proven_bound.h"
#include "remat/bound.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"
#include "remat/model.h"

namespace roam::remat {
namespace {

// The cover's MILP, built and not yet solved.
struct Cover {
  ilp::Problem problem;
  std::vector<char> copy_counts;  // per column: a copy count (branched on first)
  // The needs' and the rows' nonzeros, counted as they are added, so that a model past
  // order_bound.max_nonzeros is abandoned before it takes the memory (it grows as
  // inputs^levels).
  std::int64_t nonzeros = 0;
  bool infeasible = false;  // some step stays above the budget even evicting all it may
  bool too_large = false;   // more nonzeros than order_bound.max_nonzeros: not built
};

// Builds the cover of the header comment for one order and budget: the evictions and the rows
// that they cover, the needs (a copy in the window, or a hold) with their copies' inputs, and the
// copy counts per op and window.
class CoverBuilder {
 public:
  CoverBuilder(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
               std::vector<Bytes> live, Bytes budget, const RematParams& params)
      : graph_(graph),
        model_(model),
        live_(std::move(live)),
        budget_(budget),
        params_(params),
        recomputable_(detail::MakeOpFlags(graph, params).recomputable),
        costs_(detail::OpCosts(graph)),
        total_(TotalCost(graph)),
        touched_(model.storages.size()),
        excess_row_(order.size(), -1) {
    const int n = static_cast<int>(order.size());
    for (int t = 0; t < n; ++t) {
      for (StorageId s : model.Touches(order[U(t)])) touched_[U(s)].push_back(t);
      if (live_[U(t)] > budget) {
        excess_row_[U(t)] = static_cast<int>(excess_steps_.size());
        excess_steps_.push_back(t);
      }
    }
  }

  // Empty where the order fits the budget as it is.
  bool OrderFits() const { return excess_steps_.empty(); }

  Cover Build() && {
    AddEvictions();
    for (size_t k = 0; k < rows_.size(); ++k) {
      Bytes can = 0;
      for (const auto& [column, size] : rows_[k]) can += size;
      if (can < Excess(static_cast<int>(k))) {  // proven whatever the allowance
        out_.infeasible = true;
        return std::move(out_);
      }
    }
    if (!Charge(0)) return std::move(out_);
    for (size_t e = 0; e < evictions_.size() && !out_.too_large; ++e) {
      AddNeed(static_cast<int>(e), evictions_[e].producer, {});
      AddInputs(static_cast<int>(e), evictions_[e].producer, {}, 1);
    }
    if (out_.too_large) return std::move(out_);
    AddCopyCounts();
    AddNeedRows();
    AddCoverRows();
    return std::move(out_);
  }

 private:
  // A binary per (storage, gap between two of its touches) with steps above the budget in it,
  // those steps' rows k in [first, last].
  struct Eviction {
    StorageId storage;
    OpId producer;
    int first, last;
    int column;
  };
  // A copy of op in the eviction's window, or one of `holds` resident at its first row.
  struct Need {
    int eviction;
    OpId op;
    std::vector<int> holds;
  };

  Bytes Excess(int row) const { return live_[U(excess_steps_[U(row)])] - budget_; }

  // Adds nonzeros; false (and the model abandoned) past the allowance.
  bool Charge(std::int64_t entries) {
    out_.nonzeros += entries;
    const std::int64_t allowed = params_.order_bound.max_nonzeros;
    if (allowed > 0 && out_.nonzeros > allowed) out_.too_large = true;
    return !out_.too_large;
  }

  void AddEvictions() {
    rows_.resize(excess_steps_.size());
    for (StorageId s : model_.planned) {
      const Storage& st = model_.storages[U(s)];
      const OpId p = graph_.tensors[U(st.root)].producer;
      if (st.output || p == kNoOp || !recomputable_[U(p)]) continue;
      const std::vector<Step>& at = touched_[U(s)];
      for (size_t j = 0; j + 1 < at.size(); ++j) {
        int first = -1, last = -1;
        for (Step t = at[j] + 1; t < at[j + 1]; ++t)
          if (excess_row_[U(t)] >= 0) {
            if (first < 0) first = excess_row_[U(t)];
            last = excess_row_[U(t)];
          }
        if (first < 0) continue;
        const int column = out_.problem.AddColumn(ilp::ColumnKind::kBinary, 0, 1);
        evictions_.push_back({s, p, first, last, column});
        for (int k = first; k <= last; ++k) rows_[U(k)].emplace_back(column, st.size);
        out_.nonzeros += last - first + 1;
      }
    }
    held_.resize(rows_.size());
  }

  void AddNeed(int e, OpId op, std::vector<int> holds) {
    const Eviction& ev = evictions_[U(e)];
    const int counts = op == kNoOp ? 0 : ev.first > 0 ? 2 : 1;
    if (Charge(1 + static_cast<std::int64_t>(holds.size()) + counts))
      needs_.push_back({e, op, std::move(holds)});
  }

  // A storage the order has freed, resident at a row's step: its bytes count there, in a second
  // cover row beside the clipped one (hence a row's evictions counted again at its first hold).
  int Hold(StorageId s, int row) {
    std::vector<std::pair<StorageId, int>>& of = held_[U(row)];
    for (const auto& [storage, column] : of)
      if (storage == s) return column;
    Charge(1 + (of.empty() ? static_cast<std::int64_t>(rows_[U(row)].size()) : 0));
    const int column = out_.problem.AddColumn(ilp::ColumnKind::kBinary, 0, 1);
    of.emplace_back(s, column);
    return column;
  }

  // The copy of `op` that a need asks for (when none of `holds` is resident) runs after the
  // window's first row, so each of op's inputs the order has freed by then is resident at that
  // row (held since, or made before it and kept) or made again by a copy in the window, before
  // op's: a need of its own, one level deeper, with that input's hold added to the choices.
  void AddInputs(int e, OpId op, const std::vector<int>& holds, int level) {
    if (level > params_.order_bound.input_levels) return;
    const int first = evictions_[U(e)].first;
    const Step at_first = excess_steps_[U(first)];
    std::vector<StorageId> inputs;
    for (TensorId i : graph_.ops[U(op)].inputs) {
      if (out_.too_large) return;
      const StorageId s = model_.storage_of[U(i)];
      const Storage& st = model_.storages[U(s)];
      if (!st.planned() || st.output || touched_[U(s)].empty() ||
          touched_[U(s)].back() >= at_first ||
          std::find(inputs.begin(), inputs.end(), s) != inputs.end())
        continue;  // resident there anyway (or, live in the order, its own eviction's concern)
      inputs.push_back(s);
      const OpId q = graph_.tensors[U(st.root)].producer;
      std::vector<int> choices = holds;
      choices.push_back(Hold(s, first));
      const bool copyable = q != kNoOp && recomputable_[U(q)];
      AddNeed(e, copyable ? q : kNoOp, choices);
      if (copyable) AddInputs(e, q, choices, level + 1);
    }
  }

  // A copy needed in the window [first, last]: after the step of row `first` and before the one
  // of row last + 1. Per op, U(b) counts its copies after row 0's step and before row b + 1's
  // (integer, nondecreasing in b), so copies in a window are U(last) - U(first - 1), one copy
  // serves every window it lies in, and the op's copies cost U at its last breakpoint.
  void AddCopyCounts() {
    breaks_.resize(U(graph_.num_ops()));
    count_column_.resize(U(graph_.num_ops()));
    for (const Need& need : needs_) {
      if (need.op == kNoOp) continue;
      const Eviction& ev = evictions_[U(need.eviction)];
      breaks_[U(need.op)].push_back(ev.last);
      if (ev.first > 0) breaks_[U(need.op)].push_back(ev.first - 1);
    }
    for (OpId o = 0; o < graph_.num_ops(); ++o) {
      std::vector<int>& b = breaks_[U(o)];
      std::sort(b.begin(), b.end());
      b.erase(std::unique(b.begin(), b.end()), b.end());
      std::vector<int>& columns = count_column_[U(o)];
      for (size_t i = 0; i < b.size(); ++i) {
        const double cost = i + 1 == b.size() ? costs_[U(o)] * 100 / total_ : 0.0;
        columns.push_back(out_.problem.AddColumn(ilp::ColumnKind::kInteger, 0, b[i] + 1, cost));
        if (i > 0)
          out_.problem.AddRow(
              std::vector<std::pair<int, double>>{{columns[i], 1.0}, {columns[i - 1], -1.0}}, 0.0,
              std::numeric_limits<double>::infinity());
      }
    }
    out_.copy_counts.assign(U(out_.problem.num_columns()), 0);
    for (const std::vector<int>& columns : count_column_)
      for (int c : columns) out_.copy_counts[U(c)] = 1;
  }

  int Count(OpId o, int b) const {
    const std::vector<int>& at = breaks_[U(o)];
    return count_column_[U(o)][U(std::lower_bound(at.begin(), at.end(), b) - at.begin())];
  }

  void AddNeedRows() {
    for (const Need& need : needs_) {
      const Eviction& ev = evictions_[U(need.eviction)];
      std::vector<std::pair<int, double>> row = {{ev.column, 1.0}};
      for (int h : need.holds) row.emplace_back(h, -1.0);
      if (need.op != kNoOp) {
        row.emplace_back(Count(need.op, ev.last), -1.0);
        if (ev.first > 0) row.emplace_back(Count(need.op, ev.first - 1), 1.0);
      }
      out_.problem.AddRow(row, -std::numeric_limits<double>::infinity(), 0.0);
    }
  }

  // In units of the step's excess, an eviction larger than it counting as exactly it (the same
  // integer points, a tighter relaxation). Where the step has holds, a second row takes them:
  // there an eviction can count only up to the excess plus every hold.
  void AddCoverRows() {
    for (size_t k = 0; k < rows_.size(); ++k) {
      const auto scale = static_cast<double>(Excess(static_cast<int>(k)));
      std::vector<std::pair<int, double>> row;
      for (const auto& [column, size] : rows_[k])
        row.emplace_back(column, std::min(1.0, static_cast<double>(size) / scale));
      out_.problem.AddRow(row, 1.0, std::numeric_limits<double>::infinity());
      if (held_[k].empty()) continue;
      double holds = 0;
      row.clear();
      for (const auto& [storage, column] : held_[k]) {
        const double bytes = static_cast<double>(model_.storages[U(storage)].size) / scale;
        row.emplace_back(column, -bytes);
        holds += bytes;
      }
      for (const auto& [column, size] : rows_[k])
        row.emplace_back(column, std::min(1.0 + holds, static_cast<double>(size) / scale));
      out_.problem.AddRow(row, 1.0, std::numeric_limits<double>::infinity());
    }
  }

  const Graph& graph_;
  const MemoryModel& model_;
  const std::vector<Bytes> live_;
  const Bytes budget_;
  const RematParams& params_;
  const std::vector<char> recomputable_;
  const std::vector<double> costs_;
  const double total_;
  std::vector<std::vector<Step>> touched_;  // each storage's touches, in steps of the order
  std::vector<int> excess_row_;             // per step above the budget: its row
  std::vector<int> excess_steps_;
  std::vector<Eviction> evictions_;
  std::vector<std::vector<std::pair<int, Bytes>>> rows_;  // per row: (eviction column, bytes)
  std::vector<Need> needs_;
  std::vector<std::vector<std::pair<StorageId, int>>> held_;  // per row: (storage, hold column)
  std::vector<std::vector<int>> breaks_;        // per op: its count columns' rows, ascending
  std::vector<std::vector<int>> count_column_;  // per op: a count column per break
  Cover out_;
};

}  // namespace

OrderBound InOrderLowerBound(const Graph& graph, std::span<const OpId> order, Bytes budget,
                             const RematParams& params, double time_limit_s, double enough) {
  OrderBound out;
  if (order.empty() || TotalCost(graph) <= 0) return out;
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  const int n = static_cast<int>(order.size());
  CoverBuilder builder(graph, model, order,
                       MemoryProfile(model, ComputeLifetimes(graph, model, order), n), budget,
                       params);
  if (builder.OrderFits()) return out;
  const Cover cover = std::move(builder).Build();
  out.nonzeros = cover.nonzeros;
  if (cover.infeasible) {
    out.infeasible = true;
    out.solver = "infeasible";
    return out;
  }
  if (cover.too_large) {
    out.solver = "skipped: more nonzeros than order_bound.max_nonzeros";
    return out;
  }
  // The cover's least charge, bounded by a branch and bound whose every node's bound roam
  // proves from GLPK's duals by weak duality (ilp::ProveLowerBound). GLPK's own objective is not
  // taken: on GPT-2 XL's rows (sizes of 10^8 bytes against excesses of 10^9, before the rows
  // were scaled) its simplex called a point optimal at 1.28% where a cover of 0.73% exists, and
  // its branch and bound pruned by that (perf/RESULTS.md, "The in-order lower bound").
  ilp::ProvenBoundParams bp;
  const bool branch = params.order_bound.branch_max_nonzeros == 0 ||
                      cover.nonzeros <= params.order_bound.branch_max_nonzeros;
  bp.max_nodes = branch ? std::max<std::int64_t>(1, params.order_bound.max_nodes) : 1;
  bp.max_lp_iterations = params.order_bound.max_lp_iterations;
  bp.time_limit_s = std::max(0.001, std::min(params.order_bound.time_limit_s, time_limit_s));
  bp.enough = enough * 100;
  // The copy counts first: with them integral, the evictions and holds they allow follow
  // (random-layered-100 at 80%: complete in 200 nodes, where branching on the evictions first
  // left leaves open at 2,000; perf/RESULTS.md, "Copies' inputs in the in-order bound").
  bp.branch_first = cover.copy_counts;
  const ilp::ProvenBound b = ilp::ProveLowerBound(cover.problem, bp);
  out.solver = b.message;
  // A bound that is not finite is not reported: without the holds every eviction at 1 covers
  // every row (can >= need above), and the holds' rows are not trusted to prove a budget out
  // of reach on their own. Shaved as the compute bound is.
  if (std::isfinite(b.bound)) out.overhead = std::max(0.0, b.bound / 100 * (1 - 1e-6));
  return out;
}

}  // namespace roam::remat
