#include "baseline/orders.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <string>
#include <tuple>

#include "core/error.h"
#include "core/types.h"

namespace roam {

namespace {
constexpr std::array<std::string_view, 5> kNames = {"program", "lescea", "xla-list", "xla-dfs",
                                                    "heuristic"};

OpId RootProducer(const Graph& graph, const MemoryModel& model, StorageId sid) {
  return graph.tensors[U(model.storages[U(sid)].root)].producer;
}

// Bytes of the planned storages whose root each op produces: what running it allocates.
std::vector<Bytes> BytesDefined(const Graph& graph, const MemoryModel& model) {
  std::vector<Bytes> defined(U(graph.num_ops()), 0);
  for (StorageId sid : model.planned) {
    OpId producer = RootProducer(graph, model, sid);
    if (producer != kNoOp) defined[U(producer)] += model.storages[U(sid)].size;
  }
  return defined;
}

// Distinct ops consuming a non-empty tensor an op produces (XLA's HloInstruction::users();
// size-0 tensors are ordering edges, XLA's control successors, which it does not count).
std::vector<int> DataUsers(const Graph& graph) {
  std::vector<int> users(U(graph.num_ops()), 0);
  std::vector<OpId> seen_by(U(graph.num_ops()), kNoOp);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    for (TensorId t : graph.ops[U(op)].outputs) {
      const Tensor& tensor = graph.tensors[U(t)];
      if (tensor.size == 0) continue;
      for (OpId c : tensor.consumers) {
        if (c == op || seen_by[U(c)] == op) continue;
        seen_by[U(c)] = op;
        ++users[U(op)];
      }
    }
  }
  return users;
}

std::vector<Step> ProgramPositions(const Graph& graph) {
  std::vector<Step> position(U(graph.num_ops()));
  for (size_t s = 0; s < graph.program_order.size(); ++s)
    position[U(graph.program_order[s])] = static_cast<Step>(s);
  return position;
}

// The list scheduling shared by LESCEA and XLA's list scheduler. Both run, at each step, the
// ready op with the smallest (bytes it allocates - bytes it frees); they differ in who frees a
// storage and in the tie-breaks:
//  - LESCEA counts every op touching a storage, its producer included, so an op whose output
//    nobody reads allocates and frees it in the same step (net 0);
//  - XLA counts uses only (consumers, and producers of aliases, which write into the storage),
//    so an unread output is defined and never freed; it breaks ties by more users first.
// Both then break ties by program position. Outputs are never freed.
struct ListParams {
  bool producer_is_use = true;
  bool users_tiebreak = false;
};

std::vector<OpId> ListSchedule(const Graph& graph, const MemoryModel& model,
                               const Dependencies& deps, const ListParams& params) {
  const int n = graph.num_ops();
  const std::vector<Step> position = ProgramPositions(graph);
  const std::vector<int> users = params.users_tiebreak ? DataUsers(graph) : std::vector<int>();
  const size_t num_storages = model.storages.size();

  // Per storage: how many of its remaining (unscheduled) uses there are, and the XOR of their
  // op ids, which is the last one's id once a single use remains.
  std::vector<int> remaining(num_storages, 0);
  std::vector<OpId> remaining_xor(num_storages, 0);
  auto is_use = [&](OpId op, StorageId sid) {
    return params.producer_is_use || RootProducer(graph, model, sid) != op;
  };
  std::vector<Bytes> delta = BytesDefined(graph, model);
  for (OpId op = 0; op < n; ++op) {
    for (StorageId sid : model.Touches(op)) {
      if (!is_use(op, sid)) continue;
      ++remaining[U(sid)];
      remaining_xor[U(sid)] ^= op;
    }
  }
  auto frees = [&](StorageId sid) {
    return remaining[U(sid)] == 1 && !model.storages[U(sid)].output;
  };
  for (OpId op = 0; op < n; ++op)
    for (StorageId sid : model.Touches(op))
      if (is_use(op, sid) && frees(sid)) delta[U(op)] -= model.storages[U(sid)].size;

  // Ready ops keyed by (delta, -users, program position); position identifies the op.
  using Key = std::tuple<Bytes, int, Step>;
  auto key = [&](OpId op) {
    return Key{delta[U(op)], params.users_tiebreak ? -users[U(op)] : 0, position[U(op)]};
  };
  std::set<Key> ready;
  std::vector<char> is_ready(U(n), 0);
  std::vector<int> missing(U(n));
  for (OpId op = 0; op < n; ++op) {
    missing[U(op)] = static_cast<int>(deps.Preds(op).size());
    if (missing[U(op)] == 0) {
      ready.insert(key(op));
      is_ready[U(op)] = 1;
    }
  }
  std::vector<OpId> order;
  order.reserve(U(n));
  while (!ready.empty()) {
    const OpId op = graph.program_order[U(std::get<2>(*ready.begin()))];
    ready.erase(ready.begin());
    is_ready[U(op)] = 0;
    order.push_back(op);
    for (StorageId sid : model.Touches(op)) {
      if (!is_use(op, sid)) continue;
      --remaining[U(sid)];
      remaining_xor[U(sid)] ^= op;
      if (!frees(sid)) continue;
      // The one remaining use now frees the storage: its delta drops.
      const OpId last = remaining_xor[U(sid)];
      if (is_ready[U(last)]) ready.erase(key(last));
      delta[U(last)] -= model.storages[U(sid)].size;
      if (is_ready[U(last)]) ready.insert(key(last));
    }
    for (OpId s : deps.Succs(op)) {
      if (--missing[U(s)] == 0) {
        ready.insert(key(s));
        is_ready[U(s)] = 1;
      }
    }
  }
  return order;
}

// XLA's DFSMemoryScheduler: a post-order DFS from the sinks that visits the operands with more
// accumulated extra users (users - 1, summed over the subgraph feeding an op) first, then the
// ones with a larger accumulated size (bytes defined, summed the same way), then (our
// tie-break, XLA uses the name) the earlier in program order. Accumulated values are capped
// like XLA's (at the op count and at the running total of bytes) so shared subgraphs cannot
// overflow them. The sinks are ordered by the same rule, as the operands of XLA's root tuple.
std::vector<OpId> DfsSchedule(const Graph& graph, const MemoryModel& model,
                              const Dependencies& deps) {
  const int n = graph.num_ops();
  const std::vector<Step> position = ProgramPositions(graph);
  const std::vector<int> users = DataUsers(graph);
  const std::vector<Bytes> defined = BytesDefined(graph, model);
  std::vector<Bytes> extra_users(U(n), 0), total_sizes(U(n), 0);
  Bytes cumulative = 0;
  for (OpId op : graph.program_order) {
    Bytes extra = users[U(op)] == 0 ? 0 : users[U(op)] - 1;
    Bytes sizes = defined[U(op)];
    cumulative += defined[U(op)];
    for (OpId p : deps.Preds(op)) {  // deduplicated already
      extra += extra_users[U(p)];
      sizes += total_sizes[U(p)];
    }
    extra_users[U(op)] = std::min<Bytes>(extra, n);
    total_sizes[U(op)] = std::min(sizes, cumulative);
  }
  auto first = [&](OpId a, OpId b) {
    if (extra_users[U(a)] != extra_users[U(b)]) return extra_users[U(a)] > extra_users[U(b)];
    if (total_sizes[U(a)] != total_sizes[U(b)]) return total_sizes[U(a)] > total_sizes[U(b)];
    return position[U(a)] < position[U(b)];
  };

  std::vector<OpId> sinks;
  for (OpId op = 0; op < n; ++op)
    if (deps.Succs(op).empty()) sinks.push_back(op);
  std::sort(sinks.begin(), sinks.end(), first);

  // Iterative DFS; each frame holds an op and its operands in visiting order.
  std::vector<char> visited(U(n), 0);
  std::vector<OpId> order;
  order.reserve(U(n));
  struct Frame {
    OpId op;
    size_t next;
    size_t begin, end;  // range of `operands`
  };
  std::vector<OpId> operands;
  std::vector<Frame> stack;
  auto push = [&](OpId op) {
    visited[U(op)] = 1;
    size_t begin = operands.size();
    for (OpId p : deps.Preds(op))
      if (!visited[U(p)]) operands.push_back(p);
    std::sort(operands.begin() + static_cast<std::ptrdiff_t>(begin), operands.end(), first);
    stack.push_back({op, begin, begin, operands.size()});
  };
  for (OpId sink : sinks) {
    if (visited[U(sink)]) continue;
    push(sink);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.end) {
        OpId p = operands[top.next++];
        if (!visited[U(p)]) push(p);
        continue;
      }
      order.push_back(top.op);
      operands.resize(top.begin);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

std::span<const std::string_view> OrderNames() { return kNames; }

std::vector<OpId> LesceaOrder(const Graph& graph, const MemoryModel& model,
                              const Dependencies& deps) {
  return ListSchedule(graph, model, deps, {.producer_is_use = true, .users_tiebreak = false});
}

std::vector<OpId> XlaListOrder(const Graph& graph, const MemoryModel& model,
                               const Dependencies& deps) {
  return ListSchedule(graph, model, deps, {.producer_is_use = false, .users_tiebreak = true});
}

std::vector<OpId> XlaDfsOrder(const Graph& graph, const MemoryModel& model,
                              const Dependencies& deps) {
  return DfsSchedule(graph, model, deps);
}

std::vector<OpId> ScheduleOrder(std::string_view name, const Graph& graph,
                                const MemoryModel& model) {
  if (name == "program") return graph.program_order;
  const Dependencies deps = BuildDependencies(graph);
  if (name == "lescea") return LesceaOrder(graph, model, deps);
  if (name == "xla-list") return XlaListOrder(graph, model, deps);
  if (name == "xla-dfs") return XlaDfsOrder(graph, model, deps);
  if (name == "heuristic") {
    std::vector<OpId> best;
    Bytes best_peak = std::numeric_limits<Bytes>::max();
    for (auto* schedule : {&LesceaOrder, &XlaListOrder, &XlaDfsOrder}) {
      std::vector<OpId> order = schedule(graph, model, deps);
      const Bytes peak = TheoreticalPeak(graph, model, order);
      if (peak < best_peak) {  // strict: ties keep the earlier of lescea, xla-list, xla-dfs
        best_peak = peak;
        best = std::move(order);
      }
    }
    return best;
  }
  throw InputError("unknown order \"" + std::string(name) + "\"");
}

}  // namespace roam
