#include "core/lower_bound.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/types.h"

namespace roam {
namespace {

// Forced bytes of up to 64 ops at once. Bit i of ancestor[x] says x is an ancestor-or-self of
// the i-th op, of descendant[x] that x is a descendant-or-self of it; a storage is forced at the
// i-th op when its producer has bit i in ancestor and it is an output or one of its touching ops
// has bit i in descendant. Reused across passes so that memory stays O(n + storages).
class ForcedPass {
 public:
  ForcedPass(const Graph& graph, const MemoryModel& model, const Dependencies& deps)
      : graph_(graph),
        model_(model),
        deps_(deps),
        ancestor_(U(graph.num_ops())),
        descendant_(U(graph.num_ops())),
        toucher_(model.storages.size()) {}

  // out[i] = forced bytes of ops[i], for ops.size() <= 64.
  void Run(std::span<const OpId> ops, std::span<Bytes> out) {
    std::fill(ancestor_.begin(), ancestor_.end(), 0);
    std::fill(descendant_.begin(), descendant_.end(), 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      ancestor_[U(ops[i])] |= std::uint64_t{1} << i;
      descendant_[U(ops[i])] |= std::uint64_t{1} << i;
    }
    const std::vector<OpId>& topo = graph_.program_order;
    for (OpId v : topo)
      for (OpId p : deps_.Preds(v)) descendant_[U(v)] |= descendant_[U(p)];
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      for (OpId s : deps_.Succs(*it)) ancestor_[U(*it)] |= ancestor_[U(s)];
    std::fill(toucher_.begin(), toucher_.end(), 0);
    for (OpId op = 0; op < graph_.num_ops(); ++op)
      for (StorageId sid : model_.Touches(op)) toucher_[U(sid)] |= descendant_[U(op)];
    std::fill(out.begin(), out.end(), 0);
    for (StorageId sid : model_.planned) {
      const Storage& s = model_.storages[U(sid)];
      std::uint64_t mask = ancestor_[U(graph_.tensors[U(s.root)].producer)];
      if (!s.output) mask &= toucher_[U(sid)];
      for (; mask != 0; mask &= mask - 1) out[U(std::countr_zero(mask))] += s.size;
    }
  }

 private:
  const Graph& graph_;
  const MemoryModel& model_;
  const Dependencies& deps_;
  std::vector<std::uint64_t> ancestor_, descendant_, toucher_;
};

std::vector<Bytes> ProgramProfileByOp(const Graph& graph, const MemoryModel& model) {
  const std::vector<OpId>& order = graph.program_order;
  const std::vector<Bytes> profile =
      MemoryProfile(model, ComputeLifetimes(graph, model, order), static_cast<int>(order.size()));
  std::vector<Bytes> by_op(U(graph.num_ops()), 0);
  for (size_t s = 0; s < order.size(); ++s) by_op[U(order[s])] = profile[s];
  return by_op;
}

void EvaluateInto(ForcedPass& pass, std::span<const OpId> ops, ForcedResidency& forced) {
  Bytes values[64];
  for (size_t b = 0; b < ops.size(); b += 64) {
    const std::span<const OpId> batch = ops.subspan(b, std::min<size_t>(64, ops.size() - b));
    pass.Run(batch, std::span<Bytes>(values, batch.size()));
    for (size_t i = 0; i < batch.size(); ++i) {
      forced.per_op[U(batch[i])] = values[i];
      if (!forced.evaluated[U(batch[i])]) ++forced.num_evaluated;
      forced.evaluated[U(batch[i])] = 1;
    }
  }
}

}  // namespace

ForcedResidency CertifiedLowerBound(const Graph& graph, const MemoryModel& model,
                                    const Dependencies& deps, const ForcedParams& params) {
  const int n = graph.num_ops();
  ForcedResidency result;
  result.per_op.assign(U(n), 0);
  result.evaluated.assign(U(n), 0);
  if (n == 0) return result;
  if (!params.upper.empty() && params.upper.size() != U(n))
    throw std::invalid_argument("CertifiedLowerBound: " + std::to_string(params.upper.size()) +
                                " upper bounds for " + std::to_string(n) + " ops");
  result.upper = params.upper.empty()
                     ? ProgramProfileByOp(graph, model)
                     : std::vector<Bytes>(params.upper.begin(), params.upper.end());

  // Highest upper bound first; ties by op id, so the evaluated set does not depend on anything
  // but the input.
  std::vector<OpId> candidates(U(n));
  std::iota(candidates.begin(), candidates.end(), 0);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](OpId a, OpId b) { return result.upper[U(a)] > result.upper[U(b)]; });
  ForcedPass pass(graph, model, deps);
  const size_t limit = U(std::max(0, params.max_evaluated));
  size_t next = 0;
  while (next < candidates.size()) {
    const Bytes best_upper = result.upper[U(candidates[next])];
    // Nothing left can beat the best found, nor is asked for by evaluate_above.
    if (result.at != kNoOp && best_upper <= result.bound && best_upper <= params.evaluate_above)
      break;
    if (next >= limit ||
        (params.deadline != nullptr && result.at != kNoOp && params.deadline->Expired())) {
      result.exact = false;
      break;
    }
    const size_t count = std::min({size_t{64}, candidates.size() - next, limit - next});
    const std::span<const OpId> batch(candidates.data() + next, count);
    EvaluateInto(pass, batch, result);
    for (OpId v : batch)
      if (result.at == kNoOp || result.per_op[U(v)] > result.bound ||
          (result.per_op[U(v)] == result.bound && v < result.at)) {
        result.bound = result.per_op[U(v)];
        result.at = v;
      }
    next += count;
  }
  return result;
}

std::vector<Bytes> ForcedBytes(const Graph& graph, const MemoryModel& model,
                               const Dependencies& deps, std::span<const OpId> ops) {
  ForcedPass pass(graph, model, deps);
  std::vector<Bytes> out(ops.size(), 0);
  for (size_t b = 0; b < ops.size(); b += 64) {
    const size_t count = std::min<size_t>(64, ops.size() - b);
    pass.Run(ops.subspan(b, count), std::span<Bytes>(out.data() + b, count));
  }
  return out;
}

void EvaluateForced(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                    std::span<const OpId> ops, ForcedResidency& forced) {
  std::vector<OpId> todo;
  for (OpId v : ops)
    if (!forced.evaluated[U(v)]) todo.push_back(v);
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  if (todo.empty()) return;
  ForcedPass pass(graph, model, deps);
  EvaluateInto(pass, todo, forced);
}

}  // namespace roam
