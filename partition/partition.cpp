#include "partition/partition.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "core/op_names.h"
#include "partition/partitioner.h"

namespace roam {
namespace partition_detail {

bool ContainsNoCase(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

std::vector<Step> PositionsOf(std::span<const OpId> order, int num_ops) {
  std::vector<Step> pos(U(num_ops), kNoStep);
  for (size_t s = 0; s < order.size(); ++s) pos[U(order[s])] = static_cast<Step>(s);
  return pos;
}

}  // namespace partition_detail

namespace {

using partition_detail::ContainsNoCase;
using partition_detail::Partitioner;
using partition_detail::PositionsOf;

// Root of every tensor's alias chain (chains are acyclic; Finalize's loader checks it).
std::vector<TensorId> AliasRoots(const Graph& graph) {
  const int nt = graph.num_tensors();
  std::vector<TensorId> root(U(nt), kNoTensor);
  std::vector<TensorId> chain;
  for (TensorId t = 0; t < nt; ++t) {
    TensorId r = t;
    chain.clear();
    while (root[U(r)] == kNoTensor && graph.tensors[U(r)].alias_of != kNoTensor) {
      chain.push_back(r);
      r = graph.tensors[U(r)].alias_of;
    }
    if (root[U(r)] == kNoTensor) root[U(r)] = r;
    for (TensorId x : chain) root[U(x)] = root[U(r)];
  }
  return root;
}

}  // namespace

std::string_view ToString(OpRole role) {
  switch (role) {
    case OpRole::kSpine:
      return "spine";
    case OpRole::kFloatingSource:
      return "floating-source";
    case OpRole::kFloatingSink:
      return "floating-sink";
    case OpRole::kFloatingBridge:
      return "floating-bridge";
    case OpRole::kWeightUpdate:
      return "weight-update";
  }
  return "";
}

std::string_view ToString(UpdatePlacement placement) {
  switch (placement) {
    case UpdatePlacement::kScheduled:
      return "scheduled";
    case UpdatePlacement::kWhenReady:
      return "when-ready";
    case UpdatePlacement::kAtEnd:
      return "at-end";
    case UpdatePlacement::kSplit:
      return "split";
  }
  return "";
}

std::string_view ToString(NodeType type) {
  switch (type) {
    case NodeType::kRoot:
      return "root";
    case NodeType::kIndependent:
      return "independent";
    case NodeType::kDependent:
      return "dependent";
  }
  return "";
}

std::vector<char> MemoryInsensitivePositions(const Dependencies& deps, std::span<const OpId> order,
                                             int num_ops) {
  const int m = static_cast<int>(order.size());
  std::vector<Step> pos(U(num_ops), kNoStep);
  for (int p = 0; p < m; ++p) pos[U(order[U(p)])] = p;
  // min_succ: nearest successor inside the subset (m when none); max_pred: latest predecessor
  // (-1 when none).
  std::vector<int> min_succ(U(m), m), max_pred(U(m), -1);
  for (int p = 0; p < m; ++p) {
    for (OpId s : deps.Succs(order[U(p)]))
      if (pos[U(s)] != kNoStep) min_succ[U(p)] = std::min(min_succ[U(p)], pos[U(s)]);
    for (OpId q : deps.Preds(order[U(p)]))
      if (pos[U(q)] != kNoStep) max_pred[U(p)] = std::max(max_pred[U(p)], pos[U(q)]);
  }
  // The op at p is insensitive iff every op before it reaches it and it reaches every op after.
  // Before: by induction from p-1 down, an op reaches order[p] iff it has a successor at a
  // position <= p. After: symmetrically, iff it has a predecessor at a position >= p.
  std::vector<int> suffix_min_pred(U(m) + 1, m);
  for (int p = m - 1; p >= 0; --p)
    suffix_min_pred[U(p)] = std::min(suffix_min_pred[U(p) + 1], max_pred[U(p)]);
  std::vector<char> result(U(m), 0);
  int prefix_max_succ = -1;
  for (int p = 0; p < m; ++p) {
    result[U(p)] = prefix_max_succ <= p && suffix_min_pred[U(p) + 1] >= p ? 1 : 0;
    prefix_max_succ = std::max(prefix_max_succ, min_succ[U(p)]);
  }
  return result;
}

PhaseInfo ResolvePhases(const Graph& graph, const Dependencies& deps, std::span<const OpId> order) {
  const int n = graph.num_ops();
  PhaseInfo info;
  info.phase.assign(U(n), Phase::kForward);
  std::vector<Step> pos = PositionsOf(order, n);
  auto known = [](Phase p) {
    return p == Phase::kForward || p == Phase::kBackward || p == Phase::kOptimizer;
  };
  bool any = false;
  Step first_backward = n;
  for (OpId op = 0; op < n; ++op) {
    any = any || known(graph.ops[U(op)].phase);
    if (graph.ops[U(op)].phase == Phase::kBackward)
      first_backward = std::min(first_backward, pos[U(op)]);
  }
  if (any) {
    for (OpId op = 0; op < n; ++op) {
      Phase p = graph.ops[U(op)].phase;
      info.phase[U(op)] =
          known(p) ? p : (pos[U(op)] < first_backward ? Phase::kForward : Phase::kBackward);
    }
    return info;
  }
  info.inferred = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::string& name = graph.ops[U(*it)].name;
    if (ContainsNoCase(name, "loss") && !ContainsNoCase(name, "backward")) {
      info.loss = *it;
      break;
    }
  }
  if (info.loss == kNoOp) return info;
  const Step loss_pos = pos[U(info.loss)];
  std::vector<TensorId> root = AliasRoots(graph);
  for (Step s = loss_pos + 1; s < static_cast<Step>(order.size()); ++s) {
    const OpId op = order[U(s)];
    bool optimizer = false;
    if (IsInPlaceName(graph.ops[U(op)].name))
      for (TensorId t : graph.ops[U(op)].outputs)
        optimizer = optimizer || graph.tensors[U(root[U(t)])].producer == kNoOp;
    for (OpId p : deps.Preds(op)) optimizer = optimizer || info.phase[U(p)] == Phase::kOptimizer;
    info.phase[U(op)] = optimizer ? Phase::kOptimizer : Phase::kBackward;
  }
  return info;
}

SubgraphTree PartitionGraph(const Graph& graph, const MemoryModel& model,
                            std::span<const OpId> order, const PartitionParams& params) {
  return Partitioner(graph, model, order, params).Run();
}

SubgraphTree WindowPartition(const Graph& graph, const MemoryModel& model,
                             std::span<const OpId> order, const PartitionParams& params) {
  if (params.node_limit < 1) throw std::invalid_argument("node_limit must be at least 1");
  const Dependencies deps = BuildDependencies(graph);
  if (std::string problem = CheckTopological(graph, deps, order); !problem.empty())
    throw std::invalid_argument("WindowPartition: the order is not topological: " + problem);
  const int n = graph.num_ops();
  SubgraphTree tree;
  tree.node_limit = params.node_limit;
  tree.order.assign(order.begin(), order.end());
  tree.phases = ResolvePhases(graph, deps, order);
  tree.role.assign(U(n), OpRole::kSpine);
  const std::vector<char> insensitive = MemoryInsensitivePositions(deps, order, n);

  // Cuts: a window ends before the last insensitive op inside it once it reaches the limit.
  std::vector<int> cuts = {0};
  int last_insensitive = -1;
  for (int p = 0; p < n; ++p) {
    if (insensitive[U(p)] && p > cuts.back()) last_insensitive = p;
    if (p - cuts.back() + 1 > params.node_limit) {
      cuts.push_back(last_insensitive > cuts.back() ? last_insensitive : p);
      last_insensitive = -1;
    }
  }
  cuts.push_back(n);

  tree.nodes.push_back(SubgraphNode{NodeType::kRoot, -1, {}, {}, {}, -1, n});
  tree.leaf_of_op.assign(U(n), -1);
  std::vector<Subgraph> windows = OrderWindows(graph, model, order, cuts);
  for (size_t w = 0; w + 1 < cuts.size(); ++w) {
    Leaf leaf;
    static_cast<Subgraph&>(leaf) = std::move(windows[w]);
    const int id = static_cast<int>(tree.leaves.size());
    leaf.node = static_cast<int>(tree.nodes.size());
    leaf.first_step = cuts[w];
    leaf.over_limit = static_cast<int>(leaf.ops.size()) > params.node_limit;
    leaf.entry_bytes = leaf.EntryBytes();
    leaf.exit_bytes = leaf.ExitBytes();
    leaf.throughout_bytes = leaf.ThroughoutBytes();
    for (OpId op : leaf.ops) tree.leaf_of_op[U(op)] = id;
    SubgraphNode node{NodeType::kDependent, 0, {}, {id}, {}, id, static_cast<int>(leaf.ops.size())};
    node.parts.push_back({cuts[w], cuts[w + 1] - 1, 0, 0, order[U(cuts[w])], kNoOp});
    tree.nodes[0].children.push_back(leaf.node);
    tree.nodes[0].leaves.push_back(id);
    tree.nodes.push_back(std::move(node));
    tree.leaves.push_back(std::move(leaf));
  }

  // ROAM's layout rule, as PartitionGraph applies it.
  const auto life = ComputeLifetimes(graph, model, order);
  tree.layout_leaf.assign(model.storages.size(), -1);
  for (StorageId sid : model.planned) {
    const Storage& storage = model.storages[U(sid)];
    const OpId creator = graph.tensors[U(storage.root)].producer;
    const int created = tree.leaf_of_op[U(creator)];
    const int freed = tree.leaf_of_op[U(order[U(life[U(sid)].end)])];
    int layout = created;
    if (!storage.output && freed != created && tree.phases.phase[U(creator)] == Phase::kForward)
      layout = freed;
    tree.layout_leaf[U(sid)] = layout;
    tree.leaves[U(layout)].layout.push_back(sid);
  }
  return tree;
}

}  // namespace roam
