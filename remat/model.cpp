// The remat model: which ops may be recomputed, what they cost, and the rewrite of a remat
// schedule into an ordinary graph.
#include <algorithm>
#include <array>
#include <sstream>
#include <stdexcept>

#include "core/op_names.h"
#include "core/types.h"
#include "remat/greedy_state.h"
#include "remat/remat.h"

namespace roam::remat {
namespace {

// The op overwrites a storage in place: its name says so and one of its outputs aliases a
// tensor (its result shares the written storage).
bool IsInPlaceWrite(const Graph& graph, OpId op) {
  const Op& o = graph.ops[U(op)];
  if (!IsInPlaceName(o.name)) return false;
  for (TensorId t : o.outputs)
    if (graph.tensors[U(t)].alias_of != kNoTensor) return true;
  return false;
}

TensorId RootOf(const Graph& graph, TensorId t) {
  while (graph.tensors[U(t)].alias_of != kNoTensor) t = graph.tensors[U(t)].alias_of;
  return t;
}

std::string OpName(const Graph& graph, OpId op) {
  return "op " + std::to_string(graph.ops[U(op)].ext_id) + " (" + graph.ops[U(op)].name + ")";
}

// Walks a schedule, building the rewritten graph. Returns the first problem, or empty.
struct Walker {
  const Graph& g;
  const RecomputeRule& rule;
  Rewritten out;
  std::vector<TensorId> latest;  // per original tensor: the rewritten tensor holding its value
  std::vector<TensorId> root;    // per rewritten tensor: its storage root
  std::vector<int> version;      // per rewritten tensor: writes to its root when it was made
  std::vector<int> writes;       // per rewritten tensor (used at roots): in-place writes so far
  std::vector<std::vector<TensorId>> reads;  // per rewritten op: the tensors it reads
  std::vector<std::vector<Step>> writers;    // per rewritten root: steps writing it in place

  Walker(const Graph& graph, const RecomputeRule& r) : g(graph), rule(r) {}

  TensorId NewTensor(Tensor t) {
    const auto id = static_cast<TensorId>(out.graph.tensors.size());
    const TensorId r = t.alias_of == kNoTensor ? id : root[U(t.alias_of)];
    out.graph.tensors.push_back(std::move(t));
    root.push_back(r);
    version.push_back(writes.empty() ? 0 : (r == id ? 0 : writes[U(r)]));
    writes.push_back(0);
    writers.emplace_back();
    return id;
  }

  std::string Run(std::span<const OpId> schedule) {
    const int n = g.num_ops();
    out.graph.name = g.name;
    out.graph.ops = g.ops;
    out.graph.op_costs = g.op_costs;
    out.graph.op_costs.resize(g.ops.size());
    out.graph.op_recomputes.assign(g.ops.size(), kNoOp);
    out.recompute_count.assign(U(n), 0);
    out.origin.resize(U(n));
    for (OpId op = 0; op < n; ++op) out.origin[U(op)] = op;
    latest.assign(U(g.num_tensors()), kNoTensor);
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      Tensor copy = g.tensors[U(t)];
      copy.consumers.clear();
      copy.alias_of = kNoTensor;  // set below, once roots are known
      NewTensor(copy);
    }
    // Original tensors keep their aliasing until they are made (below: a view of a copy
    // aliases the copy); roots follow the original chains.
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      out.graph.tensors[U(t)].alias_of = g.tensors[U(t)].alias_of;
      root[U(t)] = RootOf(g, t);
      if (g.tensors[U(t)].producer == kNoOp) latest[U(t)] = t;
    }
    ExternalId next_op_id = 0, next_tensor_id = 0;
    for (const Op& op : g.ops) next_op_id = std::max(next_op_id, op.ext_id + 1);
    for (const Tensor& t : g.tensors) next_tensor_id = std::max(next_tensor_id, t.ext_id + 1);
    reads.assign(U(n), {});

    std::vector<char> seen(U(n), 0);
    for (size_t pos = 0; pos < schedule.size(); ++pos) {
      const OpId o = schedule[pos];
      if (o < 0 || o >= n) return "schedule entry " + std::to_string(pos) + " is not an op";
      const Op& op = g.ops[U(o)];
      const bool copy = seen[U(o)] != 0;
      if (copy && !IsRecomputable(g, o, rule))
        return OpName(g, o) + " is computed twice but is not recomputable";
      std::vector<TensorId> in;
      for (TensorId t : op.inputs) {
        TensorId x = latest[U(t)];
        if (x == kNoTensor)
          return OpName(g, o) + " at position " + std::to_string(pos) + " reads tensor " +
                 std::to_string(g.tensors[U(t)].ext_id) + " before it is computed";
        if (version[U(x)] != writes[U(root[U(x)])])
          return OpName(g, o) + " at position " + std::to_string(pos) + " reads tensor " +
                 std::to_string(g.tensors[U(t)].ext_id) +
                 " after an in-place write overwrote its storage";
        in.push_back(x);
      }
      const bool in_place = IsInPlaceWrite(g, o);
      for (TensorId t : op.outputs) {
        TensorId base = g.tensors[U(t)].alias_of;
        // A recomputed in-place write must write a recomputed storage: applied to the
        // original's, it would apply the write twice.
        if (copy && in_place && base != kNoTensor && latest[U(base)] != kNoTensor &&
            root[U(latest[U(base)])] < g.num_tensors())
          return OpName(g, o) + " at position " + std::to_string(pos) +
                 " would write in place again a storage it already wrote; recompute the "
                 "storage first";
        if (base != kNoTensor && latest[U(base)] == kNoTensor)
          return OpName(g, o) + " at position " + std::to_string(pos) + " makes a view of tensor " +
                 std::to_string(g.tensors[U(base)].ext_id) + " before it is computed";
      }
      OpId inst = o;
      if (copy) {
        inst = static_cast<OpId>(out.graph.ops.size());
        Op c;
        c.ext_id = next_op_id++;
        c.name = op.name;
        c.phase = op.phase;
        out.graph.ops.push_back(std::move(c));
        out.graph.op_costs.push_back(g.cost(o));
        out.graph.op_recomputes.push_back(o);
        out.origin.push_back(o);
        reads.emplace_back();
        ++out.recompute_count[U(o)];
      }
      reads[U(inst)] = in;
      seen[U(o)] = 1;
      for (TensorId t : op.outputs) {
        const Tensor& orig = g.tensors[U(t)];
        // Readers of the statistics keep reading the original's update.
        if (copy && IsSkippedStateUpdate(g, o, t, rule)) continue;
        TensorId made = t;
        if (copy) {
          Tensor c;
          c.ext_id = next_tensor_id++;
          c.size = orig.size;
          c.producer = inst;
          c.alias_of = orig.alias_of == kNoTensor ? kNoTensor : latest[U(orig.alias_of)];
          c.kind = orig.kind;
          made = NewTensor(std::move(c));
        } else if (orig.alias_of != kNoTensor && !orig.output) {
          // An original view or in-place write of a tensor whose latest computation is a copy
          // aliases that copy, the storage it reads: the original storage is then free once its
          // own readers are done (a backward's view of a forward activation recomputed for it).
          const TensorId base = latest[U(orig.alias_of)];
          out.graph.tensors[U(t)].alias_of = base;
          root[U(t)] = root[U(base)];
        }
        if (in_place && orig.alias_of != kNoTensor) {
          const TensorId r = root[U(made)];
          ++writes[U(r)];
          writers[U(r)].push_back(static_cast<Step>(pos));
        }
        version[U(made)] = writes[U(root[U(made)])];
        latest[U(t)] = made;
      }
      out.order.push_back(inst);
    }
    for (OpId op = 0; op < n; ++op)
      if (!seen[U(op)]) return OpName(g, op) + " is never computed";
    Finish(next_tensor_id);
    return {};
  }

  // Consumers from the reads, plus a size-0 ordering tensor from each copy to the next
  // in-place write of a storage it reads, so that every order of the rewritten graph keeps
  // the copy reading the value it was scheduled to read.
  void Finish(ExternalId next_tensor_id) {
    std::vector<Step> position(out.graph.ops.size());
    for (size_t s = 0; s < out.order.size(); ++s) position[U(out.order[s])] = static_cast<Step>(s);
    for (size_t op = 0; op < reads.size(); ++op)
      for (TensorId x : reads[op])
        out.graph.tensors[U(x)].consumers.push_back(static_cast<OpId>(op));
    for (OpId c = g.num_ops(); c < static_cast<OpId>(out.graph.ops.size()); ++c) {
      std::vector<OpId> targets;
      for (TensorId x : reads[U(c)]) {
        const auto& w = writers[U(root[U(x)])];
        auto it = std::upper_bound(w.begin(), w.end(), position[U(c)]);
        if (it != w.end()) targets.push_back(out.order[U(*it)]);
      }
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      for (OpId w : targets) {
        Tensor t;
        t.ext_id = next_tensor_id++;
        t.producer = c;
        t.consumers = {w};
        t.kind = TensorKind::kControl;
        NewTensor(std::move(t));
      }
    }
    for (Tensor& t : out.graph.tensors) {
      std::sort(t.consumers.begin(), t.consumers.end());
      t.consumers.erase(std::unique(t.consumers.begin(), t.consumers.end()), t.consumers.end());
    }
    out.graph.program_order = out.order;
    Finalize(out.graph, "remat rewrite");
  }
};

}  // namespace

namespace detail {
bool IsInPlaceWrite(const Graph& graph, OpId op) { return roam::remat::IsInPlaceWrite(graph, op); }
}  // namespace detail

bool IsRandom(std::string_view name) {
  static constexpr std::array<std::string_view, 9> kRandom = {
      "dropout",     "bernoulli", "rand",        "normal",   "uniform",
      "multinomial", "poisson",   "exponential", "geometric"};
  std::string_view base = OpBaseName(name);
  for (std::string_view r : kRandom)
    if (base.find(r) != std::string_view::npos) return true;
  return false;
}

namespace {
// Ops whose only write is a state update their other outputs do not depend on. In training
// mode (the only mode in which the exporter records the update) native_batch_norm normalises
// with the batch's statistics and only then updates the running ones.
bool UpdatesStateOnTheSide(std::string_view name) {
  return OpBaseName(name) == "native_batch_norm";
}

bool OnGraphInputStorage(const Graph& graph, TensorId t) {
  const Tensor& tensor = graph.tensors[U(t)];
  return tensor.alias_of != kNoTensor &&
         graph.tensors[U(RootOf(graph, tensor.alias_of))].producer == kNoOp;
}
}  // namespace

bool IsSkippedStateUpdate(const Graph& graph, OpId op, TensorId t, const RecomputeRule& rule) {
  return rule.state_update_skipped && UpdatesStateOnTheSide(graph.ops[U(op)].name) &&
         OnGraphInputStorage(graph, t);
}

bool IsRecomputable(const Graph& graph, OpId op, const RecomputeRule& rule) {
  const Op& o = graph.ops[U(op)];
  if (o.phase == Phase::kOptimizer || graph.recomputes(op) != kNoOp) return false;
  // An in-place write is recomputed only as part of recomputing the storage it writes (a
  // schedule rule, CheckSchedule); it never writes persistent state again.
  if (IsInPlaceName(o.name))
    for (TensorId t : o.outputs) {
      const Tensor& tensor = graph.tensors[U(t)];
      if (tensor.alias_of != kNoTensor &&
          graph.tensors[U(RootOf(graph, tensor.alias_of))].producer == kNoOp)
        return false;
    }
  if (!rule.rng_state_kept && IsRandom(o.name)) return false;
  // An op that makes fresh memory and also returns a tensor on a graph input's storage writes
  // that storage, since no view op makes fresh memory: the PyTorch exporter records
  // native_batch_norm's update of the running statistics this way, and recomputing it would
  // apply the update twice, unless the copy leaves the update out (IsSkippedStateUpdate).
  // Other outputs aliasing a graph input are views of it (in-place writes were excluded by
  // name), so they write no persistent state.
  bool fresh = false, writes_state = false;
  for (TensorId t : o.outputs) {
    const Tensor& tensor = graph.tensors[U(t)];
    if (tensor.size == 0 && tensor.kind == TensorKind::kControl) continue;  // ordering only
    if (tensor.alias_of == kNoTensor)
      fresh = true;
    else if (OnGraphInputStorage(graph, t) && !IsSkippedStateUpdate(graph, op, t, rule))
      writes_state = true;
  }
  if (fresh && writes_state) return false;
  return !o.outputs.empty();
}

double OpCost(const Graph& graph, OpId op) {
  const Op& o = graph.ops[U(op)];
  if (auto cost = graph.cost(op)) return *cost;
  double bytes = 0;
  bool view = true;
  for (TensorId t : o.outputs) {
    const Tensor& tensor = graph.tensors[U(t)];
    if (tensor.size == 0 && tensor.kind == TensorKind::kControl) continue;  // ordering only
    if (tensor.alias_of == kNoTensor) {
      bytes += static_cast<double>(tensor.size);
      view = false;
    }
  }
  if (view && !o.outputs.empty()) return 0.0;
  for (TensorId t : o.inputs) bytes += static_cast<double>(graph.tensors[U(t)].size);
  return kCostPerByte * bytes;
}

double TotalCost(const Graph& graph) {
  double total = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) total += OpCost(graph, op);
  return total;
}

std::string CheckSchedule(const Graph& graph, std::span<const OpId> schedule,
                          const RecomputeRule& rule) {
  Walker walker(graph, rule);
  try {
    return walker.Run(schedule);
  } catch (const std::exception& e) {
    return e.what();
  }
}

Rewritten Rewrite(const Graph& graph, std::span<const OpId> schedule, const RecomputeRule& rule) {
  Walker walker(graph, rule);
  if (std::string problem = walker.Run(schedule); !problem.empty())
    throw std::invalid_argument("invalid remat schedule: " + problem);
  return std::move(walker.out);
}

}  // namespace roam::remat
