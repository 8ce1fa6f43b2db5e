#include "core/graph.h"

#include <algorithm>
#include <array>
#include <queue>
#include <sstream>

#include "core/error.h"
#include "core/types.h"

namespace roam {
namespace {

constexpr std::array<std::pair<Phase, std::string_view>, 5> kPhaseNames = {{
    {Phase::kUnknown, ""},
    {Phase::kForward, "forward"},
    {Phase::kBackward, "backward"},
    {Phase::kOptimizer, "optimizer"},
    {Phase::kOther, "other"},
}};

constexpr std::array<std::pair<TensorKind, std::string_view>, 8> kKindNames = {{
    {TensorKind::kNone, ""},
    {TensorKind::kWeight, "weight"},
    {TensorKind::kOptimizerState, "optimizer_state"},
    {TensorKind::kInput, "input"},
    {TensorKind::kActivation, "activation"},
    {TensorKind::kGradient, "gradient"},
    {TensorKind::kTemporary, "temporary"},
    {TensorKind::kControl, "control"},
}};

void FillCsr(int n, std::vector<std::pair<OpId, OpId>>& edges, bool by_first,
             std::vector<int>& begin, std::vector<OpId>& adj) {
  std::sort(edges.begin(), edges.end(), [by_first](const auto& a, const auto& b) {
    return by_first ? a < b : std::make_pair(a.second, a.first) < std::make_pair(b.second, b.first);
  });
  begin.assign(U(n) + 1, 0);
  adj.clear();
  adj.reserve(edges.size());
  for (const auto& [from, to] : edges) {
    OpId key = by_first ? from : to;
    adj.push_back(by_first ? to : from);
    ++begin[U(key) + 1];
  }
  for (int i = 0; i < n; ++i) begin[U(i) + 1] += begin[U(i)];
}

}  // namespace

std::string_view ToString(Phase phase) {
  for (const auto& [value, name] : kPhaseNames)
    if (value == phase) return name;
  return "";
}

std::string_view ToString(TensorKind kind) {
  for (const auto& [value, name] : kKindNames)
    if (value == kind) return name;
  return "";
}

bool ParsePhase(std::string_view text, Phase* phase) {
  for (const auto& [value, name] : kPhaseNames) {
    if (name == text) {
      *phase = value;
      return true;
    }
  }
  return false;
}

bool ParseTensorKind(std::string_view text, TensorKind* kind) {
  for (const auto& [value, name] : kKindNames) {
    if (name == text) {
      *kind = value;
      return true;
    }
  }
  return false;
}

Dependencies BuildDependencies(const Graph& graph) {
  std::vector<std::pair<OpId, OpId>> edges;
  for (const Tensor& t : graph.tensors) {
    if (t.producer != kNoOp) {
      for (OpId c : t.consumers)
        if (c != t.producer) edges.emplace_back(t.producer, c);
      if (t.alias_of != kNoTensor) {
        OpId base_producer = graph.tensors[U(t.alias_of)].producer;
        if (base_producer != kNoOp && base_producer != t.producer)
          edges.emplace_back(base_producer, t.producer);
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  Dependencies deps;
  FillCsr(graph.num_ops(), edges, /*by_first=*/true, deps.succ_begin, deps.succs);
  FillCsr(graph.num_ops(), edges, /*by_first=*/false, deps.pred_begin, deps.preds);
  return deps;
}

std::vector<char> ReachableOps(const Dependencies& deps, OpId start, bool forward) {
  std::vector<char> seen(deps.pred_begin.size() - 1, 0);
  std::vector<OpId> stack = {start};
  seen[U(start)] = 1;
  while (!stack.empty()) {
    const OpId v = stack.back();
    stack.pop_back();
    for (OpId w : forward ? deps.Succs(v) : deps.Preds(v))
      if (!seen[U(w)]) {
        seen[U(w)] = 1;
        stack.push_back(w);
      }
  }
  return seen;
}

std::vector<OpId> FindCycle(const Graph& graph, const Dependencies& deps) {
  // Iterative three-colour DFS; the grey stack at a back edge is the cycle.
  const int n = graph.num_ops();
  std::vector<char> colour(U(n), 0);
  std::vector<OpId> stack;
  std::vector<int> next_child(U(n), 0);
  for (OpId root = 0; root < n; ++root) {
    if (colour[U(root)] != 0) continue;
    stack.push_back(root);
    colour[U(root)] = 1;
    while (!stack.empty()) {
      OpId v = stack.back();
      auto succs = deps.Succs(v);
      if (next_child[U(v)] < static_cast<int>(succs.size())) {
        OpId w = succs[U(next_child[U(v)]++)];
        if (colour[U(w)] == 1) {
          auto it = std::find(stack.begin(), stack.end(), w);
          return std::vector<OpId>(it, stack.end());
        }
        if (colour[U(w)] == 0) {
          colour[U(w)] = 1;
          stack.push_back(w);
        }
      } else {
        colour[U(v)] = 2;
        stack.pop_back();
      }
    }
  }
  return {};
}

std::string CheckTopological(const Graph& graph, const Dependencies& deps,
                             std::span<const OpId> order) {
  const int n = graph.num_ops();
  std::ostringstream msg;
  if (static_cast<int>(order.size()) != n) {
    msg << "order has " << order.size() << " entries but the graph has " << n << " ops";
    return msg.str();
  }
  std::vector<Step> position(U(n), kNoStep);
  for (size_t s = 0; s < order.size(); ++s) {
    OpId op = order[s];
    if (op < 0 || op >= n) {
      msg << "order entry " << s << " is not an op of the graph";
      return msg.str();
    }
    if (position[U(op)] != kNoStep) {
      msg << "op " << graph.ops[U(op)].ext_id << " appears twice in the order (positions "
          << position[U(op)] << " and " << s << ")";
      return msg.str();
    }
    position[U(op)] = static_cast<Step>(s);
  }
  for (size_t s = 0; s < order.size(); ++s) {
    OpId op = order[s];
    for (OpId p : deps.Preds(op)) {
      if (position[U(p)] > static_cast<Step>(s)) {
        msg << "op " << graph.ops[U(op)].ext_id << " (" << graph.ops[U(op)].name << ") at position "
            << s << " runs before op " << graph.ops[U(p)].ext_id << " (" << graph.ops[U(p)].name
            << ") at position " << position[U(p)] << ", which it depends on";
        return msg.str();
      }
    }
  }
  return {};
}

void Finalize(Graph& graph, std::string_view source) {
  if (!graph.op_costs.empty()) graph.op_costs.resize(U(graph.num_ops()));
  if (!graph.op_recomputes.empty()) graph.op_recomputes.resize(U(graph.num_ops()), kNoOp);
  for (Op& op : graph.ops) {
    op.inputs.clear();
    op.outputs.clear();
  }
  for (TensorId t = 0; t < graph.num_tensors(); ++t) {
    const Tensor& tensor = graph.tensors[U(t)];
    if (tensor.producer != kNoOp) graph.ops[U(tensor.producer)].outputs.push_back(t);
    for (OpId c : tensor.consumers) {
      auto& inputs = graph.ops[U(c)].inputs;
      if (inputs.empty() || inputs.back() != t) inputs.push_back(t);
    }
  }
  Dependencies deps = BuildDependencies(graph);
  if (auto cycle = FindCycle(graph, deps); !cycle.empty()) {
    std::ostringstream msg;
    msg << source << ": the dependencies form a cycle through ops";
    for (OpId op : cycle) msg << ' ' << graph.ops[U(op)].ext_id;
    msg << " (back to " << graph.ops[U(cycle.front())].ext_id << ")";
    throw InputError(msg.str());
  }
  if (graph.program_order.empty() && graph.num_ops() > 0) {
    // Kahn's algorithm, smallest external id first, so the default order is deterministic.
    std::vector<int> missing(U(graph.num_ops()));
    using Entry = std::pair<ExternalId, OpId>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      missing[U(op)] = static_cast<int>(deps.Preds(op).size());
      if (missing[U(op)] == 0) ready.emplace(graph.ops[U(op)].ext_id, op);
    }
    while (!ready.empty()) {
      OpId op = ready.top().second;
      ready.pop();
      graph.program_order.push_back(op);
      for (OpId s : deps.Succs(op))
        if (--missing[U(s)] == 0) ready.emplace(graph.ops[U(s)].ext_id, s);
    }
  } else if (auto problem = CheckTopological(graph, deps, graph.program_order); !problem.empty()) {
    throw InputError(std::string(source) + ": program_order: " + problem);
  }
}

}  // namespace roam
