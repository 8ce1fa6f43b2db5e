// The graph as values on a base order (values.h).
#include "remat/values.h"

#include <algorithm>

#include "core/memory_model.h"
#include "core/op_names.h"
#include "core/types.h"

namespace roam::remat::detail {
namespace {

// Every output of op aliases an input (a view: reshape, transpose, slice, ...), and op writes
// nothing in place.
bool IsPureView(const Graph& graph, const Op& op) {
  if (op.outputs.empty() || IsInPlaceName(op.name)) return false;
  for (TensorId t : op.outputs)
    if (graph.tensors[U(t)].alias_of == kNoTensor) return false;
  return true;
}

}  // namespace

Values BuildValues(const Graph& graph, const Schedule& base, const RematParams& params,
                   bool view_chains) {
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  Values v;
  v.n = static_cast<int>(base.size());
  v.op = base;
  std::vector<int> pos(U(graph.num_ops()), -1);
  for (int p = 0; p < v.n; ++p) pos[U(base[U(p)])] = p;
  v.keep.assign(U(v.n), 0);
  v.all.assign(U(v.n), 0);
  v.cost.assign(U(v.n), 0);
  v.deps.assign(U(v.n), {});
  v.users.assign(U(v.n), {});
  v.output.assign(U(v.n), 0);
  v.recomputable.assign(U(v.n), 0);
  v.views.assign(U(v.n), {});
  // Positions of in-place writes per storage: a copy must run before the next one of a
  // storage it reads.
  std::vector<std::vector<int>> writes(model.storages.size());
  for (int p = 0; p < v.n; ++p) {
    const Op& o = graph.ops[U(base[U(p)])];
    if (!IsInPlaceName(o.name)) continue;
    for (TensorId t : o.outputs)
      if (graph.tensors[U(t)].alias_of != kNoTensor) writes[U(model.storage_of[U(t)])].push_back(p);
  }
  // The producers of every member of a tensor's alias chain: the view and its storage.
  auto chain = [&](TensorId t, std::vector<int>& into) {
    for (; t != kNoTensor; t = graph.tensors[U(t)].alias_of)
      if (OpId pr = graph.tensors[U(t)].producer; pr != kNoOp) into.push_back(pos[U(pr)]);
  };
  for (int p = 0; p < v.n; ++p) {
    const OpId o = base[U(p)];
    const Op& op = graph.ops[U(o)];
    v.cost[U(p)] = OpCost(graph, o);
    bool simple = true;  // no output aliases or is aliased
    for (TensorId t : op.outputs) {
      const Tensor& tensor = graph.tensors[U(t)];
      const StorageId s = model.storage_of[U(t)];
      const Storage& st = model.storages[U(s)];
      if (tensor.alias_of != kNoTensor || st.members.size() > 1) simple = false;
      if (st.output) v.output[U(p)] = 1;
      if (tensor.alias_of == kNoTensor && st.planned()) {
        v.all[U(p)] += static_cast<double>(st.size);
        bool read = st.output;
        for (TensorId m : st.members) read = read || !graph.tensors[U(m)].consumers.empty();
        if (read) v.keep[U(p)] += static_cast<double>(st.size);
      }
      if (tensor.alias_of != kNoTensor) chain(tensor.alias_of, v.deps[U(p)]);
    }
    for (TensorId t : op.inputs) chain(t, v.deps[U(p)]);
    auto& d = v.deps[U(p)];
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    d.erase(std::remove(d.begin(), d.end(), p), d.end());
    for (int q : d) v.users[U(q)].push_back(p);
    const bool allowed =
        !v.output[U(p)] && v.all[U(p)] > 0 && IsRecomputable(graph, o, params.rule);
    bool viewed_only = false;  // its outputs are roots whose other members are views' outputs
    if (view_chains && allowed && !simple) {
      viewed_only = true;
      std::vector<int>& views = v.views[U(p)];
      for (TensorId t : op.outputs) {
        if (graph.tensors[U(t)].alias_of != kNoTensor) viewed_only = false;
        for (TensorId m : model.storages[U(model.storage_of[U(t)])].members) {
          if (m == t) continue;
          const OpId producer = graph.tensors[U(m)].producer;
          if (producer == kNoOp || !IsPureView(graph, graph.ops[U(producer)]) ||
              !IsRecomputable(graph, producer, params.rule)) {
            viewed_only = false;
          } else {
            views.push_back(pos[U(producer)]);
          }
        }
      }
      std::sort(views.begin(), views.end());
      views.erase(std::unique(views.begin(), views.end()), views.end());
      if (!viewed_only) views.clear();
    }
    v.recomputable[U(p)] = (simple || viewed_only) && allowed;
    if (allowed && (!simple || op.outputs.size() > 1)) v.exact = false;
  }
  // Windows: a value may be recomputed up to its last original reader (never after an
  // in-place write of a storage it reads), and is read up to the last stage any reader may be
  // computed in. A recomputation feeding only a later recomputation is outside the model.
  v.horizon.assign(U(v.n), 0);
  v.last_recompute.assign(U(v.n), -1);
  v.write_limit.assign(U(v.n), v.n);
  std::vector<int> last_reader(U(v.n));
  for (int p = 0; p < v.n; ++p) {
    last_reader[U(p)] = p;
    for (int c : v.users[U(p)]) last_reader[U(p)] = std::max(last_reader[U(p)], c);
  }
  for (int p = 0; p < v.n; ++p) {
    if (!v.recomputable[U(p)]) continue;
    for (TensorId t : graph.ops[U(base[U(p)])].inputs) {
      const auto& w = writes[U(model.storage_of[U(t)])];
      auto it = std::upper_bound(w.begin(), w.end(), p);
      if (it != w.end()) v.write_limit[U(p)] = std::min(v.write_limit[U(p)], *it);
    }
    v.last_recompute[U(p)] = std::min(last_reader[U(p)], v.write_limit[U(p)]);
  }
  for (int p = 0; p < v.n; ++p) {
    int h = v.output[U(p)] ? v.n - 1 : p;
    for (int c : v.users[U(p)]) h = std::max(h, std::max(c, v.last_recompute[U(c)]));
    v.horizon[U(p)] = h;
  }
  return v;
}

}  // namespace roam::remat::detail
