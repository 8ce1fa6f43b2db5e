// CheckFaithful: a graph with copies computes what its original computes.
#include <algorithm>
#include <unordered_map>

#include "core/op_names.h"
#include "core/types.h"
#include "remat/remat.h"

namespace roam::remat {
namespace {

bool IsOrdering(const Tensor& t) { return t.size == 0 && t.kind == TensorKind::kControl; }

TensorId RootOf(const Graph& graph, TensorId t) {
  while (graph.tensors[U(t)].alias_of != kNoTensor) t = graph.tensors[U(t)].alias_of;
  return t;
}

std::vector<TensorId> Valued(const Graph& graph, const std::vector<TensorId>& ids) {
  std::vector<TensorId> out;
  for (TensorId t : ids)
    if (!IsOrdering(graph.tensors[U(t)])) out.push_back(t);
  return out;
}

std::string Name(const Graph& graph, OpId op) {
  return "op " + std::to_string(graph.ops[U(op)].ext_id) + " (" + graph.ops[U(op)].name + ")";
}
std::string TensorName(const Graph& graph, TensorId t) {
  return "tensor " + std::to_string(graph.tensors[U(t)].ext_id);
}

}  // namespace

std::string CheckFaithful(const Graph& graph, const Graph* original) {
  const int n = graph.num_ops();
  // value[t]: the tensor whose value t carries (itself unless a copy produced it).
  std::vector<TensorId> value(U(graph.num_tensors()));
  for (TensorId t = 0; t < graph.num_tensors(); ++t) value[U(t)] = t;
  auto value_of = [&](TensorId t) { return t == kNoTensor ? kNoTensor : value[U(t)]; };
  RecomputeRule deterministic_parts;
  deterministic_parts.rng_state_kept = true;  // whether the RNG state was kept is not recorded
  for (OpId c = 0; c < n; ++c) {
    const Op& copy = graph.ops[U(c)];
    const OpId o = graph.recomputes(c);
    if (o == kNoOp) continue;
    const Op& op = graph.ops[U(o)];
    if (graph.recomputes(o) != kNoOp)
      return Name(graph, c) + " recomputes " + Name(graph, o) + ", which is itself a copy";
    if (copy.name != op.name)
      return Name(graph, c) + " recomputes " + Name(graph, o) + " but has another name";
    if (!IsRecomputable(graph, o, deterministic_parts))
      return Name(graph, c) + " recomputes " + Name(graph, o) +
             ", which is not recomputable (an optimizer op or a write of persistent state)";
    auto mine = Valued(graph, copy.outputs), theirs = Valued(graph, op.outputs);
    std::erase_if(
        theirs, [&](TensorId t) { return IsSkippedStateUpdate(graph, o, t, deterministic_parts); });
    if (mine.size() != theirs.size())
      return Name(graph, c) + " has " + std::to_string(mine.size()) + " outputs, " +
             Name(graph, o) + " has " + std::to_string(theirs.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      const Tensor &a = graph.tensors[U(mine[i])], &b = graph.tensors[U(theirs[i])];
      if (a.size != b.size || a.kind != b.kind)
        return TensorName(graph, mine[i]) + " of " + Name(graph, c) +
               " differs in size or kind from " + TensorName(graph, theirs[i]) +
               ", which it recomputes";
      if (a.output) return TensorName(graph, mine[i]) + " is a recomputed graph output";
      value[U(mine[i])] = theirs[i];
    }
    // A recomputed in-place write must write a storage that a copy made.
    for (TensorId out : mine) {
      const Tensor& t = graph.tensors[U(out)];
      if (t.alias_of == kNoTensor) continue;
      const OpId root_producer = graph.tensors[U(RootOf(graph, out))].producer;
      if (IsInPlaceName(copy.name) &&
          (root_producer == kNoOp || graph.recomputes(root_producer) == kNoOp))
        return Name(graph, c) + " writes in place a storage that is not a recomputed one";
    }
  }
  auto values_read = [&](const Op& op) {
    std::vector<TensorId> v;
    for (TensorId t : Valued(graph, op.inputs)) v.push_back(value[U(t)]);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  Dependencies deps;
  bool have_deps = false;
  std::vector<std::vector<OpId>> writers(U(graph.num_tensors()));  // by storage root
  for (OpId w = 0; w < n; ++w) {
    const Op& op = graph.ops[U(w)];
    if (!IsInPlaceName(op.name)) continue;
    for (TensorId t : op.outputs)
      if (graph.tensors[U(t)].alias_of != kNoTensor) writers[U(RootOf(graph, t))].push_back(w);
  }
  for (OpId c = 0; c < n; ++c) {
    const Op& copy = graph.ops[U(c)];
    if (graph.recomputes(c) == kNoOp) continue;
    const Op& op = graph.ops[U(graph.recomputes(c))];
    for (TensorId out : Valued(graph, copy.outputs)) {
      const Tensor& t = graph.tensors[U(out)];
      const Tensor& orig = graph.tensors[U(value[U(out)])];
      // Both in values: the original itself may alias a copy (a view made after it).
      if (value_of(t.alias_of) != value_of(orig.alias_of))
        return TensorName(graph, out) + " of " + Name(graph, c) +
               " does not alias what the original's output aliases";
    }
    if (values_read(copy) != values_read(op))
      return Name(graph, c) + " does not read the values " + Name(graph, graph.recomputes(c)) +
             " reads";
    // The values must not have been overwritten in place before the copy reads them: every
    // in-place write of a storage it reads happened before the tensor read was made, or after
    // the copy.
    std::vector<char> after;
    for (TensorId x : Valued(graph, copy.inputs)) {
      const auto& w = writers[U(RootOf(graph, x))];
      if (w.empty()) continue;
      if (!have_deps) {
        deps = BuildDependencies(graph);
        have_deps = true;
      }
      if (after.empty()) after = ReachableOps(deps, c, /*forward=*/true);
      const OpId producer = graph.tensors[U(x)].producer;
      std::vector<char> before;
      if (producer != kNoOp) before = ReachableOps(deps, producer, /*forward=*/false);
      for (OpId writer : w) {
        const bool earlier = producer != kNoOp && before[U(writer)];
        if (!earlier && !after[U(writer)])
          return Name(graph, c) + " reads " + TensorName(graph, x) + " but is not ordered before " +
                 Name(graph, writer) + ", which overwrites its storage in place";
      }
    }
  }
  // An original's view or in-place write is of the computation it reads: the storage its
  // result shares is the one it was computed from, a copy's once it reads a copy (a graph
  // output keeps its storage, as in the rewrite).
  for (OpId o = 0; o < n; ++o) {
    const Op& op = graph.ops[U(o)];
    if (graph.recomputes(o) != kNoOp) continue;
    for (TensorId out : op.outputs) {
      const TensorId base = graph.tensors[U(out)].alias_of;
      if (base == kNoTensor ||
          std::find(op.inputs.begin(), op.inputs.end(), base) != op.inputs.end())
        continue;
      if (graph.tensors[U(base)].producer != kNoOp &&
          graph.recomputes(graph.tensors[U(base)].producer) != kNoOp)
        return TensorName(graph, out) + " of " + Name(graph, o) + " aliases " +
               TensorName(graph, base) + " of a copy, which it does not read";
      if (graph.tensors[U(out)].output) continue;
      for (TensorId x : op.inputs)
        if (value[U(x)] == value[U(base)])
          return TensorName(graph, out) + " of " + Name(graph, o) + " aliases " +
                 TensorName(graph, base) + " but reads " + TensorName(graph, x) +
                 ", another computation of it";
    }
  }
  if (original == nullptr) return {};

  // The graph minus its copies is the original.
  std::unordered_map<ExternalId, OpId> op_of;
  std::unordered_map<ExternalId, TensorId> tensor_of;
  for (OpId op = 0; op < n; ++op) op_of.emplace(graph.ops[U(op)].ext_id, op);
  for (TensorId t = 0; t < graph.num_tensors(); ++t)
    tensor_of.emplace(graph.tensors[U(t)].ext_id, t);
  int originals = 0;
  for (OpId op = 0; op < n; ++op) originals += graph.recomputes(op) == kNoOp ? 1 : 0;
  if (originals != original->num_ops())
    return "the graph has " + std::to_string(originals) +
           " ops that are not copies, the original " + std::to_string(original->num_ops());
  std::vector<TensorId> mapped(U(original->num_tensors()), kNoTensor);
  for (TensorId t = 0; t < original->num_tensors(); ++t) {
    const Tensor& ot = original->tensors[U(t)];
    auto it = tensor_of.find(ot.ext_id);
    if (it == tensor_of.end())
      return "tensor " + std::to_string(ot.ext_id) + " of the original is missing";
    const Tensor& gt = graph.tensors[U(it->second)];
    auto ext_op = [](const Graph& g, OpId op) { return op == kNoOp ? -1 : g.ops[U(op)].ext_id; };
    auto ext_t = [](const Graph& g, TensorId x) {
      return x == kNoTensor ? -1 : g.tensors[U(x)].ext_id;
    };
    if (gt.size != ot.size || gt.output != ot.output || gt.kind != ot.kind ||
        ext_op(graph, gt.producer) != ext_op(*original, ot.producer) ||
        ext_t(graph, value_of(gt.alias_of)) != ext_t(*original, ot.alias_of) ||
        (gt.producer != kNoOp && graph.recomputes(gt.producer) != kNoOp))
      return "tensor " + std::to_string(ot.ext_id) + " differs from the original's";
    mapped[U(t)] = it->second;
  }
  for (OpId o = 0; o < original->num_ops(); ++o) {
    const Op& oo = original->ops[U(o)];
    auto it = op_of.find(oo.ext_id);
    if (it == op_of.end() || graph.recomputes(it->second) != kNoOp ||
        graph.ops[U(it->second)].name != oo.name)
      return "op " + std::to_string(oo.ext_id) + " of the original is missing or renamed";
    std::vector<TensorId> want;
    for (TensorId t : oo.inputs)
      if (!IsOrdering(original->tensors[U(t)])) want.push_back(mapped[U(t)]);
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    if (values_read(graph.ops[U(it->second)]) != want)
      return "op " + std::to_string(oo.ext_id) +
             " does not read the values it reads in the original";
  }
  return {};
}

}  // namespace roam::remat
