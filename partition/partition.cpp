#include "partition/partition.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/op_names.h"

namespace roam {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

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

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(U(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[U(x)] != x) x = parent[U(x)] = parent[U(parent[U(x)])];
    return x;
  }
  void Join(int a, int b) { parent[U(Find(a))] = Find(b); }
};

// An item is the unit leaves are packed from: a spine segment with the floating ops bound to
// it, or one weight-update branch, or a piece of either split at an inner insensitive op.
struct Item {
  int segment = 0;
  int branch = -1;
  std::vector<OpId> ops;  // in the order being refined
};

// An independent subgraph as ranges of segments (one or two parts).
using SegmentRange = std::pair<int, int>;  // inclusive
using Ranges = std::vector<SegmentRange>;

class Partitioner {
 public:
  Partitioner(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
              const PartitionParams& params)
      : graph_(graph),
        model_(model),
        order_(order),
        params_(params),
        n_(graph.num_ops()),
        deps_(BuildDependencies(graph)) {}

  SubgraphTree Run() {
    if (params_.node_limit < 1) throw std::invalid_argument("node_limit must be at least 1");
    if (std::string problem = CheckTopological(graph_, deps_, order_); !problem.empty())
      throw std::invalid_argument("PartitionGraph: the order is not topological: " + problem);
    pos_ = PositionsOf(order_, n_);
    tree_.node_limit = params_.node_limit;
    tree_.update_placement = params_.update_placement;
    tree_.phases = ResolvePhases(graph_, deps_, order_);
    phase_ = &tree_.phases.phase;
    FindBranches();
    ComputeSpine();
    ComputeSegments();
    PeelBranches();
    BindSources(/*with_branches=*/false);
    FindActivations();
    ScheduleBranches();
    BindSources(/*with_branches=*/true);
    FindActivations();
    BuildItems();
    BuildTree();
    ClassifyStorages();
    return std::move(tree_);
  }

 private:
  Phase PhaseOf(OpId op) const { return (*phase_)[U(op)]; }
  OpRole RoleOf(OpId op) const { return tree_.role[U(op)]; }
  OpId Creator(StorageId sid) const {
    return graph_.tensors[U(model_.storages[U(sid)].root)].producer;
  }

  // Weight-update branches (docs/partition.md, "Weight-update branches").
  void FindBranches() {
    // Seeds: optimizer ops all of whose descendants are optimizer ops, grouped into weakly
    // connected components...
    std::vector<char> in_update(U(n_), 0);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (PhaseOf(op) != Phase::kOptimizer) continue;
      bool closed = true;
      for (OpId s : deps_.Succs(op)) closed = closed && in_update[U(s)] != 0;
      in_update[U(op)] = closed ? 1 : 0;
    }
    UnionFind components(n_);
    for (OpId op = 0; op < n_; ++op)
      if (in_update[U(op)])
        for (OpId s : deps_.Succs(op)) components.Join(op, s);
    std::vector<int> branch_of(U(n_), -1);
    std::vector<int> branch_of_root(U(n_), -1);
    extended_.assign(U(n_), 0);
    int num_branches = 0;
    for (OpId op : order_) {
      if (!in_update[U(op)]) continue;
      int root = components.Find(op);
      if (branch_of_root[U(root)] < 0) branch_of_root[U(root)] = num_branches++;
      branch_of[U(op)] = branch_of_root[U(root)];
    }
    // ...extended upstream by the non-forward ops that feed exactly one branch and nothing
    // else, such as the matmul computing a weight's gradient.
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (branch_of[U(op)] >= 0 || PhaseOf(op) == Phase::kForward) continue;
      auto succs = deps_.Succs(op);
      if (succs.empty()) continue;
      int b = branch_of[U(succs.front())];
      for (OpId s : succs) b = branch_of[U(s)] == b ? b : -1;
      branch_of[U(op)] = b;
      if (b >= 0) extended_[U(op)] = 1;
    }
    tree_.role.assign(U(n_), OpRole::kSpine);
    tree_.branches.resize(U(num_branches));
    branch_of_ = std::move(branch_of);
    for (OpId op : order_)
      if (branch_of_[U(op)] >= 0) {
        tree_.role[U(op)] = OpRole::kWeightUpdate;
        tree_.branches[U(branch_of_[U(op)])].ops.push_back(op);
      }
  }

  bool InBranch(OpId op) const { return branch_of_[U(op)] >= 0; }

  // The spine (docs/partition.md, "The spine"): per weakly connected component of the graph
  // without the branches, the trunk from the anchors to the terminals, less the ops that hop
  // from the forward pass into the backward pass beside the loss.
  void ComputeSpine() {
    // Longest paths (in edges) from the sources to each op, and from each op to the sinks.
    std::vector<int> depth(U(n_), 0), height(U(n_), 0);
    UnionFind components(n_);
    for (OpId op : order_) {
      if (InBranch(op)) continue;
      for (OpId p : deps_.Preds(op)) {
        depth[U(op)] = std::max(depth[U(op)], depth[U(p)] + 1);
        components.Join(p, op);
      }
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (InBranch(op)) continue;
      for (OpId s : deps_.Succs(op))
        if (!InBranch(s)) height[U(op)] = std::max(height[U(op)], height[U(s)] + 1);
    }
    std::vector<int> comp(U(n_));
    for (OpId op = 0; op < n_; ++op) comp[U(op)] = components.Find(op);

    // Trunk: descendants of an anchor (a source of greatest height in its component) that are
    // ancestors of a terminal (a sink of greatest depth).
    std::vector<int> max_height(U(n_), -1), max_depth(U(n_), -1);  // per component root
    for (OpId op = 0; op < n_; ++op) {
      if (InBranch(op)) continue;
      const size_t c = U(comp[U(op)]);
      if (deps_.Preds(op).empty()) max_height[c] = std::max(max_height[c], height[U(op)]);
      if (height[U(op)] == 0) max_depth[c] = std::max(max_depth[c], depth[U(op)]);
    }
    std::vector<char> from_anchor(U(n_), 0), trunk(U(n_), 0);
    for (OpId op : order_) {
      if (InBranch(op)) continue;
      char a = deps_.Preds(op).empty() && height[U(op)] == max_height[U(comp[U(op)])];
      for (OpId p : deps_.Preds(op)) a = a || from_anchor[U(p)];
      from_anchor[U(op)] = a;
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (InBranch(op) || !from_anchor[U(op)]) continue;
      char t = height[U(op)] == 0 && depth[U(op)] == max_depth[U(comp[U(op)])];
      for (OpId s : deps_.Succs(op)) t = t || (!InBranch(s) && trunk[U(s)]);
      trunk[U(op)] = t;
    }

    // The pivots: the trunk's forward op without forward successors in the trunk that starts
    // the longest path (the loss, or the op feeding the backward pass), and its backward op
    // without backward predecessors in the trunk that starts the longest path (the gradient
    // seed).
    auto in_trunk = [&](OpId op) { return !InBranch(op) && trunk[U(op)]; };
    std::vector<OpId> fwd_end(U(n_), kNoOp), bwd_start(U(n_), kNoOp);  // per component root
    auto better_end = [&](OpId a, OpId b) {
      if (b == kNoOp) return true;
      if (height[U(a)] != height[U(b)]) return height[U(a)] > height[U(b)];
      if (depth[U(a)] != depth[U(b)]) return depth[U(a)] > depth[U(b)];
      return pos_[U(a)] > pos_[U(b)];
    };
    auto better_start = [&](OpId a, OpId b) {
      if (b == kNoOp) return true;
      if (height[U(a)] != height[U(b)]) return height[U(a)] > height[U(b)];
      if (depth[U(a)] != depth[U(b)]) return depth[U(a)] < depth[U(b)];
      return pos_[U(a)] < pos_[U(b)];
    };
    for (OpId op : order_) {
      if (!in_trunk(op)) continue;
      const Phase phase = PhaseOf(op);
      bool blocked = false;
      if (phase == Phase::kForward) {
        for (OpId s : deps_.Succs(op))
          blocked = blocked || (in_trunk(s) && PhaseOf(s) == Phase::kForward);
        OpId& end = fwd_end[U(comp[U(op)])];
        if (!blocked && better_end(op, end)) end = op;
      } else if (phase == Phase::kBackward) {
        for (OpId p : deps_.Preds(op))
          blocked = blocked || (in_trunk(p) && PhaseOf(p) == Phase::kBackward);
        OpId& start = bwd_start[U(comp[U(op)])];
        if (!blocked && better_start(op, start)) start = op;
      }
    }
    // Forward part: ancestors of the forward end; backward part: descendants of the backward
    // start. A component without both keeps its whole trunk.
    std::vector<char> to_end(U(n_), 0), from_start(U(n_), 0);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (!in_trunk(op)) continue;
      char r = op == fwd_end[U(comp[U(op)])];
      for (OpId s : deps_.Succs(op)) r = r || (in_trunk(s) && to_end[U(s)]);
      to_end[U(op)] = r;
    }
    for (OpId op : order_) {
      if (!in_trunk(op)) continue;
      char r = op == bwd_start[U(comp[U(op)])];
      for (OpId p : deps_.Preds(op)) r = r || from_start[U(p)];
      from_start[U(op)] = r;
    }
    for (OpId op = 0; op < n_; ++op) {
      if (InBranch(op)) continue;
      const size_t c = U(comp[U(op)]);
      const bool both = fwd_end[c] != kNoOp && bwd_start[c] != kNoOp;
      const bool spine = in_trunk(op) && (!both || to_end[U(op)] || from_start[U(op)]);
      // Ops without predecessors (the anchors among them) are bound to their consumers.
      if (!spine || deps_.Preds(op).empty())
        tree_.role[U(op)] = OpRole::kFloatingSource;  // refined in ComputeSegments
    }
    // Reported: the pivots of the component with the longest trunk.
    int best = -1;
    for (OpId op = 0; op < n_; ++op) {
      if (!in_trunk(op) || fwd_end[U(comp[U(op)])] == kNoOp) continue;
      if (best < 0 || max_depth[U(comp[U(op)])] > max_depth[U(best)]) best = comp[U(op)];
    }
    if (best >= 0) {
      tree_.forward_end = fwd_end[U(best)];
      tree_.backward_start = bwd_start[U(best)];
    }
  }

  // Segments of the spine, then every op off the spine bound to one (docs/partition.md,
  // "Binding the floating ops"). Branches get theirs from the scheduler.
  void ComputeSegments() {
    std::vector<OpId> core;
    for (OpId op : order_)
      if (RoleOf(op) == OpRole::kSpine) core.push_back(op);
    std::vector<char> mi = MemoryInsensitivePositions(deps_, core, n_);
    tree_.segment_of_op.assign(U(n_), 0);
    int segment = 0;
    for (size_t p = 0; p < core.size(); ++p) {
      if (mi[p]) {
        tree_.insensitive.push_back(core[p]);
        if (p > 0) ++segment;
      }
      if (p == 0 || (mi[p] && p > 0)) {
        segment_first_op_.push_back(core[p]);
        segment_opens_with_mi_.push_back(mi[p]);
      }
      tree_.segment_of_op[U(core[p])] = segment;
    }
    num_segments_ = core.empty() ? 1 : segment + 1;
    if (core.empty()) {
      segment_first_op_.push_back(kNoOp);
      segment_opens_with_mi_.push_back(0);
    }
    tree_.num_segments = num_segments_;

    // Natural segment: the one the input order puts the op in (the latest spine op at or
    // before it). lo/hi: latest segment of a spine ancestor (-1: none) and earliest of a spine
    // descendant (num_segments: none), through paths off the spine.
    const int m = num_segments_;
    natural_.assign(U(n_), 0);
    lo_.assign(U(n_), -1);
    hi_.assign(U(n_), m);
    int current = 0;
    for (OpId op : order_) {
      if (RoleOf(op) == OpRole::kSpine) current = tree_.segment_of_op[U(op)];
      natural_[U(op)] = current;
      if (InBranch(op) || RoleOf(op) == OpRole::kSpine) continue;
      for (OpId p : deps_.Preds(op))
        lo_[U(op)] = std::max(lo_[U(op)],
                              RoleOf(p) == OpRole::kSpine ? tree_.segment_of_op[U(p)] : lo_[U(p)]);
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (InBranch(op) || RoleOf(op) == OpRole::kSpine) continue;
      for (OpId s : deps_.Succs(op))
        if (!InBranch(s))
          hi_[U(op)] = std::min(
              hi_[U(op)], RoleOf(s) == OpRole::kSpine ? tree_.segment_of_op[U(s)] : hi_[U(s)]);
    }
    for (OpId op = 0; op < n_; ++op) {
      if (InBranch(op) || RoleOf(op) == OpRole::kSpine) continue;
      tree_.role[U(op)] = lo_[U(op)] < 0   ? OpRole::kFloatingSource
                          : hi_[U(op)] < m ? OpRole::kFloatingBridge
                                           : OpRole::kFloatingSink;
    }
    // Bridges: their natural segment clamped to [lo, hi] (lo <= hi: docs). Sinks: the latest
    // segment among their predecessors with a spine ancestor, in order.
    for (OpId op : order_) {
      if (RoleOf(op) == OpRole::kFloatingBridge) {
        tree_.segment_of_op[U(op)] = std::clamp(natural_[U(op)], lo_[U(op)], hi_[U(op)]);
      } else if (RoleOf(op) == OpRole::kFloatingSink) {
        int s = 0;
        for (OpId p : deps_.Preds(op))
          if (RoleOf(p) != OpRole::kFloatingSource) s = std::max(s, tree_.segment_of_op[U(p)]);
        tree_.segment_of_op[U(op)] = s;
      }
    }
  }

  // A branch that sums gradient contributions arriving at different times (a weight used
  // twice, such as a tied embedding) would hold the earlier contribution's computation back
  // until the later one exists. So an op the extension added whose inputs are ready in an
  // earlier segment than the data the rest of its branch reads (size-0 ordering edges do not
  // count there) goes back out as a floating sink, in the segment where it is ready, with its
  // extended ancestors (ready no later).
  void PeelBranches() {
    const int nb = static_cast<int>(tree_.branches.size());
    std::vector<int> ready(U(n_), -1), data_ready(U(nb), -1);
    auto bound = [&](OpId p) { return !InBranch(p) && RoleOf(p) != OpRole::kFloatingSource; };
    for (OpId op : order_) {
      if (!InBranch(op)) continue;
      int r = -1;
      for (OpId p : deps_.Preds(op)) {
        if (InBranch(p) && extended_[U(p)]) r = std::max(r, ready[U(p)]);
        if (bound(p)) r = std::max(r, tree_.segment_of_op[U(p)]);
      }
      ready[U(op)] = r;
      int& d = data_ready[U(branch_of_[U(op)])];
      for (TensorId t : graph_.ops[U(op)].inputs) {
        const Tensor& tensor = graph_.tensors[U(t)];
        if (tensor.size == 0 || tensor.kind == TensorKind::kControl) continue;
        if (tensor.producer != kNoOp && bound(tensor.producer))
          d = std::max(d, tree_.segment_of_op[U(tensor.producer)]);
      }
    }
    // Reverse order: an extended op feeding a peeled op goes out with it (as a floating
    // source when nothing bound feeds it), so the branch stays closed under successors.
    bool peeled = false;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const OpId op = *it;
      if (!InBranch(op) || !extended_[U(op)]) continue;
      bool out = ready[U(op)] >= 0 && ready[U(op)] < data_ready[U(branch_of_[U(op)])];
      for (OpId succ : deps_.Succs(op)) out = out || !InBranch(succ);
      if (!out) continue;
      branch_of_[U(op)] = -1;
      tree_.role[U(op)] = ready[U(op)] >= 0 ? OpRole::kFloatingSink : OpRole::kFloatingSource;
      tree_.segment_of_op[U(op)] = std::max(ready[U(op)], 0);
      peeled = true;
    }
    if (!peeled) return;
    for (WeightUpdateBranch& branch : tree_.branches)
      std::erase_if(branch.ops, [&](OpId op) { return !InBranch(op); });
  }

  // Floating sources: the earliest segment among their successors, in reverse order so chains
  // follow their consumer; an op without successors stays in its natural segment. Before the
  // branches are scheduled their ops do not count.
  void BindSources(bool with_branches) {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      OpId op = *it;
      if (RoleOf(op) != OpRole::kFloatingSource) continue;
      int s = num_segments_;
      for (OpId succ : deps_.Succs(op))
        if (with_branches || !InBranch(succ)) s = std::min(s, tree_.segment_of_op[U(succ)]);
      tree_.segment_of_op[U(op)] = s < num_segments_ ? s : natural_[U(op)];
    }
  }

  // Activations (ROAM's E_atvs): planned storages created by a forward op outside the branches
  // whose last use outside the branches is a backward op. Their creation and last-use segments
  // drive both the independent subgraphs and the weight-update scheduler.
  void FindActivations() {
    activations_.clear();
    const int ns = static_cast<int>(model_.storages.size());
    std::vector<Step> last_pos(U(ns), kNoStep);
    std::vector<int> last_seg(U(ns), -1);
    for (OpId op = 0; op < n_; ++op) {
      if (InBranch(op)) continue;
      for (StorageId sid : model_.Touches(op)) {
        last_pos[U(sid)] = std::max(last_pos[U(sid)], pos_[U(op)]);
        last_seg[U(sid)] = std::max(last_seg[U(sid)], tree_.segment_of_op[U(op)]);
      }
    }
    for (StorageId sid : model_.planned) {
      OpId creator = Creator(sid);
      if (InBranch(creator) || PhaseOf(creator) != Phase::kForward) continue;
      OpId last = order_[U(last_pos[U(sid)])];
      if (PhaseOf(last) != Phase::kBackward) continue;
      activations_.push_back(
          {sid, tree_.segment_of_op[U(creator)], last_seg[U(sid)], model_.storages[U(sid)].size});
    }
  }

  double InferAlpha() const {
    for (OpId op = 0; op < n_; ++op) {
      if (PhaseOf(op) != Phase::kOptimizer) continue;
      const std::string& name = graph_.ops[U(op)].name;
      if (ContainsNoCase(name, "sqrt") || ContainsNoCase(name, "addcdiv")) return 3;
    }
    return 1;
  }

  // ROAM eqs 4-6 at segment granularity (docs/partition.md).
  void ScheduleBranches() {
    tree_.alpha = params_.alpha > 0 ? params_.alpha : InferAlpha();
    const int m = num_segments_;
    Bytes esti_pm = 0;
    std::vector<Bytes> delta(U(m) + 1, 0);
    for (const Activation& a : activations_) {
      esti_pm += a.size;
      delta[U(a.created)] += a.size;
      delta[U(a.freed) + 1] -= a.size;
    }
    tree_.estimated_peak = esti_pm;
    std::vector<Bytes> mem_atvs(U(m));
    Bytes live = 0;
    for (int s = 0; s < m; ++s) mem_atvs[U(s)] = live += delta[U(s)];
    Bytes total = 0;
    for (StorageId sid : model_.planned) total += model_.storages[U(sid)].size;
    const double average = model_.planned.empty() ? 0.0
                                                  : static_cast<double>(total) /
                                                        static_cast<double>(model_.planned.size());

    for (int b = 0; b < static_cast<int>(tree_.branches.size()); ++b) {
      WeightUpdateBranch& branch = tree_.branches[U(b)];
      int earliest = 0;
      Bytes grad = 0;
      for (OpId op : branch.ops) {
        // Sources are bound later, at or before their successors.
        for (OpId p : deps_.Preds(op))
          if (!InBranch(p) && RoleOf(p) != OpRole::kFloatingSource)
            earliest = std::max(earliest, tree_.segment_of_op[U(p)]);
        // The gradient and the optimizer's temporaries: what its optimizer ops touch (not the
        // activation gradient an extended weight-gradient matmul reads).
        if (PhaseOf(op) != Phase::kOptimizer) continue;
        for (StorageId sid : model_.Touches(op))
          if (PhaseOf(Creator(sid)) != Phase::kForward)
            grad = std::max(grad, model_.storages[U(sid)].size);
      }
      branch.earliest_segment = earliest;
      branch.grad_bytes = grad;
      int segment = earliest;
      const bool large = average > 0 && static_cast<double>(grad) > params_.delay_radius * average;
      if (params_.update_placement == UpdatePlacement::kAtEnd) segment = m - 1;
      if (params_.update_placement == UpdatePlacement::kScheduled && esti_pm > 0 && large) {
        auto mem_used = [&](int s) {
          return static_cast<double>(mem_atvs[U(s)]) + tree_.alpha * static_cast<double>(grad);
        };
        while (segment < m - 1 && mem_used(segment) > static_cast<double>(esti_pm)) ++segment;
      }
      branch.segment = segment;
      for (OpId op : branch.ops) tree_.segment_of_op[U(op)] = segment;
    }
    if (params_.update_placement == UpdatePlacement::kSplit) SplitBranches();
  }

  // kSplit: the head of a branch is what must run to consume the memory it was handed (the
  // gradient, or what an extended op made from it) and whatever the head creates from that,
  // closed under predecessors inside the branch; it runs when ready and frees the gradient.
  // The rest only makes temporaries from persistent state and goes to the last segment. No
  // head op depends on a tail op (the head is closed under predecessors), and the tail's
  // outside inputs are all ready by the last segment, so the order stays topological.
  void SplitBranches() {
    const int m = num_segments_;
    const int nb = static_cast<int>(tree_.branches.size());
    std::vector<char> head(U(n_), 0);
    for (int b = 0; b < nb; ++b) {
      const std::vector<OpId> ops = tree_.branches[U(b)].ops;  // in order: preds first
      std::vector<char> owned(model_.storages.size(), 0);      // created by head ops
      bool grew = true;
      while (grew) {
        grew = false;
        for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
          const OpId op = *it;
          bool in = head[U(op)] != 0;
          for (StorageId sid : model_.Touches(op)) {
            const OpId creator = Creator(sid);
            const bool handed = creator == kNoOp || branch_of_[U(creator)] != b ||
                                extended_[U(creator)] || owned[U(sid)];
            in = in || handed;
          }
          for (OpId s : deps_.Succs(op)) in = in || (branch_of_[U(s)] == b && head[U(s)]);
          if (in && !head[U(op)]) {
            head[U(op)] = 1;
            grew = true;
            for (TensorId t : graph_.ops[U(op)].outputs)
              if (model_.storages[U(model_.storage_of[U(t)])].planned())
                owned[U(model_.storage_of[U(t)])] = 1;
          }
        }
      }
      WeightUpdateBranch tail;
      for (OpId op : ops)
        if (!head[U(op)]) tail.ops.push_back(op);
      if (tail.ops.empty() || tail.ops.size() == ops.size()) continue;
      WeightUpdateBranch& branch = tree_.branches[U(b)];
      std::erase_if(branch.ops, [&](OpId op) { return !head[U(op)]; });
      branch.segment = branch.earliest_segment;
      for (OpId op : branch.ops) tree_.segment_of_op[U(op)] = branch.segment;
      tail.earliest_segment = branch.earliest_segment;
      tail.segment = m - 1;
      tail.tail = true;
      const int t = static_cast<int>(tree_.branches.size());
      for (OpId op : tail.ops) {
        branch_of_[U(op)] = t;
        tree_.segment_of_op[U(op)] = m - 1;
      }
      tree_.branches.push_back(std::move(tail));
    }
  }

  void BuildItems() {
    const int m = num_segments_;
    std::vector<std::vector<int>> branches_at(U(m));
    for (int b = 0; b < static_cast<int>(tree_.branches.size()); ++b)
      branches_at[U(tree_.branches[U(b)].segment)].push_back(b);
    std::vector<Item> items;
    std::vector<int> a_item(U(m)), b_item(tree_.branches.size());
    for (int s = 0; s < m; ++s) {
      a_item[U(s)] = static_cast<int>(items.size());
      items.push_back({s, -1, {}});
      for (int b : branches_at[U(s)]) {
        b_item[U(b)] = static_cast<int>(items.size());
        items.push_back({s, b, {}});
      }
    }
    std::vector<int> item_of(U(n_), -1);
    for (OpId op = 0; op < n_; ++op)
      item_of[U(op)] =
          InBranch(op) ? b_item[U(branch_of_[U(op)])] : a_item[U(tree_.segment_of_op[U(op)])];
    for (OpId op : order_) items[U(item_of[U(op)])].ops.push_back(op);

    // Split items over the limit at their inner insensitive ops: every op before such an op
    // is its ancestor and every op after its descendant, so the pieces keep all edges forward.
    for (Item& item : items) {
      if (item.ops.empty()) continue;
      if (static_cast<int>(item.ops.size()) <= params_.node_limit) {
        items_.push_back(std::move(item));
        continue;
      }
      std::vector<char> mi = MemoryInsensitivePositions(deps_, item.ops, n_);
      Item piece{item.segment, item.branch, {}};
      for (size_t p = 0; p < item.ops.size(); ++p) {
        if (mi[p] && p > 0) {
          items_.push_back(std::move(piece));
          piece = Item{item.segment, item.branch, {}};
        }
        piece.ops.push_back(item.ops[p]);
      }
      items_.push_back(std::move(piece));
    }
    seg_size_.assign(U(m), 0);
    for (const Item& item : items_) seg_size_[U(item.segment)] += static_cast<int>(item.ops.size());
  }

  int RangeSize(const SegmentRange& r) const {
    int size = 0;
    for (int s = r.first; s <= r.second; ++s) size += seg_size_[U(s)];
    return size;
  }

  static Ranges MergeRanges(Ranges ranges) {
    std::sort(ranges.begin(), ranges.end());
    Ranges merged;
    for (const SegmentRange& r : ranges) {
      if (!merged.empty() && merged.back().second + 1 == r.first)
        merged.back().second = r.second;
      else
        merged.push_back(r);
    }
    return merged;
  }

  // Algorithm 1's independent subgraphs: grown outward from the loss, each closed so that no
  // activation crosses its boundary (created inside and freed outside or the reverse).
  std::vector<Ranges> IndependentSubgraphs() const {
    const int m = num_segments_;
    int pivot = -1;
    for (OpId op : order_)
      if (RoleOf(op) == OpRole::kSpine && PhaseOf(op) == Phase::kBackward) {
        int s = tree_.segment_of_op[U(op)];
        pivot = pivot < 0 ? s : std::min(pivot, s);
      }
    std::vector<Ranges> igs;
    if (pivot < 0) {
      for (int s = 0; s < m; ++s) igs.push_back({{s, s}});
      return igs;
    }
    std::vector<int> max_freed(U(m), -1), min_created(U(m), m);
    for (const Activation& a : activations_) {
      max_freed[U(a.created)] = std::max(max_freed[U(a.created)], a.freed);
      min_created[U(a.freed)] = std::min(min_created[U(a.freed)], a.created);
    }
    int lo = pivot, hi = pivot;
    int need_hi = max_freed[U(pivot)], need_lo = min_created[U(pivot)];
    auto include = [&](int s) {
      need_hi = std::max(need_hi, max_freed[U(s)]);
      need_lo = std::min(need_lo, min_created[U(s)]);
    };
    auto close = [&] {
      while (hi < need_hi || lo > need_lo) {
        while (hi < need_hi) include(++hi);
        while (lo > need_lo) include(--lo);
      }
    };
    close();
    igs.push_back({{lo, hi}});
    while (lo > 0 || hi < m - 1) {
      const int inner_lo = lo, inner_hi = hi;
      if (lo > 0) include(--lo);
      if (hi < m - 1) include(++hi);
      close();
      Ranges parts;
      if (lo < inner_lo) parts.push_back({lo, inner_lo - 1});
      if (hi > inner_hi) parts.push_back({inner_hi + 1, hi});
      igs.push_back(parts);
    }
    return igs;
  }

  void BuildTree() {
    // Merge adjacent closed subgraphs outward while every part still fits one leaf: Algorithm
    // 1 on aten-level graphs closes a subgraph around almost every op pair.
    std::vector<Ranges> merged;
    for (const Ranges& ig : IndependentSubgraphs()) {
      if (!merged.empty()) {
        Ranges candidate = merged.back();
        candidate.insert(candidate.end(), ig.begin(), ig.end());
        candidate = MergeRanges(candidate);
        bool fits = true;
        for (const SegmentRange& r : candidate) fits = fits && RangeSize(r) <= params_.node_limit;
        if (fits) {
          merged.back() = candidate;
          continue;
        }
      }
      merged.push_back(MergeRanges(ig));
    }
    std::sort(merged.begin(), merged.end());  // by first part, i.e. execution order

    struct PendingLeaf {
      int item_begin, item_end, node;
    };
    std::vector<PendingLeaf> pending;
    tree_.nodes.push_back(SubgraphNode{});  // root
    for (const Ranges& ig : merged) {
      std::vector<std::pair<int, int>> packed;  // item ranges
      for (const SegmentRange& r : ig) {
        auto by_segment = [](const Item& item, int s) { return item.segment < s; };
        const int begin = static_cast<int>(
            std::lower_bound(items_.begin(), items_.end(), r.first, by_segment) - items_.begin());
        const int end = static_cast<int>(
            std::lower_bound(items_.begin(), items_.end(), r.second + 1, by_segment) -
            items_.begin());
        int start = begin, size = 0;
        for (int i = begin; i < end; ++i) {
          int s = static_cast<int>(items_[U(i)].ops.size());
          if (size > 0 && size + s > params_.node_limit) {
            packed.push_back({start, i});
            start = i;
            size = 0;
          }
          size += s;
        }
        if (size > 0) packed.push_back({start, end});
      }
      if (packed.empty()) continue;
      const int ig_node = static_cast<int>(tree_.nodes.size());
      tree_.nodes.push_back(SubgraphNode{NodeType::kIndependent, 0, {}, {}, {}, -1, 0});
      tree_.nodes[0].children.push_back(ig_node);
      if (packed.size() == 1) {
        pending.push_back({packed[0].first, packed[0].second, ig_node});
        continue;
      }
      for (const auto& [b, e] : packed) {
        const int dg = static_cast<int>(tree_.nodes.size());
        tree_.nodes.push_back(SubgraphNode{NodeType::kDependent, ig_node, {}, {}, {}, -1, 0});
        tree_.nodes[U(ig_node)].children.push_back(dg);
        pending.push_back({b, e, dg});
      }
    }
    std::sort(pending.begin(), pending.end(), [](const PendingLeaf& a, const PendingLeaf& b) {
      return a.item_begin < b.item_begin;
    });

    tree_.leaf_of_op.assign(U(n_), -1);
    for (const PendingLeaf& p : pending) {
      const int id = static_cast<int>(tree_.leaves.size());
      Leaf leaf;
      leaf.node = p.node;
      leaf.first_segment = items_[U(p.item_begin)].segment;
      leaf.last_segment = items_[U(p.item_end - 1)].segment;
      for (int i = p.item_begin; i < p.item_end; ++i)
        leaf.ops.insert(leaf.ops.end(), items_[U(i)].ops.begin(), items_[U(i)].ops.end());
      std::sort(leaf.ops.begin(), leaf.ops.end(),
                [&](OpId a, OpId b) { return pos_[U(a)] < pos_[U(b)]; });
      leaf.first_step = static_cast<Step>(tree_.order.size());
      leaf.over_limit = static_cast<int>(leaf.ops.size()) > params_.node_limit;
      for (OpId op : leaf.ops) {
        tree_.leaf_of_op[U(op)] = id;
        tree_.order.push_back(op);
      }
      SubgraphNode& node = tree_.nodes[U(p.node)];
      node.leaf = id;
      tree_.leaves.push_back(std::move(leaf));
    }
    // Leaves, op counts and parts of every node, bottom-up.
    for (int l = 0; l < static_cast<int>(tree_.leaves.size()); ++l) {
      const Leaf& leaf = tree_.leaves[U(l)];
      for (int node = leaf.node; node >= 0; node = tree_.nodes[U(node)].parent) {
        SubgraphNode& x = tree_.nodes[U(node)];
        x.leaves.push_back(l);
        x.num_ops += static_cast<int>(leaf.ops.size());
        const Step last = leaf.first_step + static_cast<Step>(leaf.ops.size()) - 1;
        if (!x.parts.empty() && x.parts.back().last_step + 1 == leaf.first_step) {
          x.parts.back().last_step = last;
          x.parts.back().last_segment = leaf.last_segment;
        } else {
          x.parts.push_back({leaf.first_step, last, leaf.first_segment, leaf.last_segment});
        }
      }
    }
    for (SubgraphNode& node : tree_.nodes) {
      for (NodePart& part : node.parts) {
        part.begin_boundary = segment_opens_with_mi_[U(part.first_segment)]
                                  ? segment_first_op_[U(part.first_segment)]
                                  : kNoOp;
        part.end_boundary = part.last_segment + 1 < num_segments_
                                ? segment_first_op_[U(part.last_segment + 1)]
                                : kNoOp;
      }
    }
  }

  void ClassifyStorages() {
    const int ns = static_cast<int>(model_.storages.size());
    const int nl = static_cast<int>(tree_.leaves.size());
    tree_.layout_leaf.assign(U(ns), -1);
    // Leaves touching each storage, CSR.
    std::vector<int> count(U(ns) + 1, 0);
    for (OpId op = 0; op < n_; ++op)
      for (StorageId sid : model_.Touches(op)) ++count[U(sid) + 1];
    for (int s = 0; s < ns; ++s) count[U(s) + 1] += count[U(s)];
    std::vector<int> touching(U(count[U(ns)]));
    std::vector<int> fill(count.begin(), count.end() - 1);
    for (OpId op = 0; op < n_; ++op)
      for (StorageId sid : model_.Touches(op))
        touching[U(fill[U(sid)]++)] = tree_.leaf_of_op[U(op)];

    SubgraphNode& root = tree_.nodes[0];
    for (StorageId sid = 0; sid < ns; ++sid) {
      const Storage& storage = model_.storages[U(sid)];
      if (!storage.planned()) continue;
      auto begin = touching.begin() + count[U(sid)], end = touching.begin() + count[U(sid) + 1];
      std::sort(begin, end);
      end = std::unique(begin, end);
      const OpId creator = Creator(sid);
      const int created = tree_.leaf_of_op[U(creator)];
      const int freed = storage.output ? nl : *(end - 1);
      for (int l = created; l <= std::min(freed, nl - 1); ++l) {
        Crossing c =
            l == created
                ? (freed == created ? Crossing::kInner : Crossing::kCreatedInsideFreedOutside)
                : (l == freed ? Crossing::kCreatedOutsideFreedInside : Crossing::kLiveThroughout);
        Leaf& leaf = tree_.leaves[U(l)];
        leaf.storages.push_back({sid, storage.size, c});
        if (c == Crossing::kCreatedOutsideFreedInside || c == Crossing::kLiveThroughout)
          leaf.entry_bytes += storage.size;
        if (c == Crossing::kCreatedInsideFreedOutside || c == Crossing::kLiveThroughout)
          leaf.exit_bytes += storage.size;
        if (c == Crossing::kLiveThroughout) leaf.throughout_bytes += storage.size;
      }
      // ROAM's rule: what the forward pass creates is laid out where it is freed; what the
      // backward pass or the optimizer creates, where it is created.
      int layout = created;
      if (!storage.output && freed != created && PhaseOf(creator) == Phase::kForward)
        layout = freed;
      tree_.layout_leaf[U(sid)] = layout;
      tree_.leaves[U(layout)].layout.push_back(sid);

      // Node statistics: inner when one node holds every touching op.
      auto add = [&](SubgraphNode& node, bool inner) {
        (inner ? node.inner_storages : node.boundary_storages) += 1;
        (inner ? node.inner_bytes : node.boundary_bytes) += storage.size;
      };
      add(root, !storage.output);
      std::vector<int> igs, dgs;
      for (auto it = begin; it != end; ++it) {
        int node = tree_.leaves[U(*it)].node;
        if (tree_.nodes[U(node)].type == NodeType::kDependent) {
          dgs.push_back(node);
          node = tree_.nodes[U(node)].parent;
        }
        igs.push_back(node);
      }
      for (std::vector<int>* level : {&igs, &dgs}) {
        std::sort(level->begin(), level->end());
        level->erase(std::unique(level->begin(), level->end()), level->end());
      }
      for (int node : igs) add(tree_.nodes[U(node)], igs.size() == 1 && !storage.output);
      const bool one_leaf = end - begin == 1;
      for (int node : dgs) add(tree_.nodes[U(node)], one_leaf && !storage.output);
    }
  }

  struct Activation {
    StorageId storage;
    int created, freed;  // segments
    Bytes size;
  };

  const Graph& graph_;
  const MemoryModel& model_;
  std::span<const OpId> order_;
  const PartitionParams& params_;
  const int n_;
  const Dependencies deps_;
  std::vector<Step> pos_;
  const std::vector<Phase>* phase_ = nullptr;
  std::vector<int> branch_of_;
  std::vector<char> extended_;          // per op: added to its branch by the upstream extension
  std::vector<int> natural_, lo_, hi_;  // per op off the spine (docs: binding floating ops)
  int num_segments_ = 1;
  std::vector<OpId> segment_first_op_;
  std::vector<char> segment_opens_with_mi_;
  std::vector<Activation> activations_;
  std::vector<Item> items_;
  std::vector<int> seg_size_;
  SubgraphTree tree_;
};

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
  for (size_t w = 0; w + 1 < cuts.size(); ++w) {
    Leaf leaf;
    static_cast<Subgraph&>(leaf) = OrderWindow(graph, model, order, cuts[w], cuts[w + 1]);
    const int id = static_cast<int>(tree.leaves.size());
    leaf.node = static_cast<int>(tree.nodes.size());
    leaf.first_step = cuts[w];
    leaf.over_limit = static_cast<int>(leaf.ops.size()) > params.node_limit;
    for (const LeafStorage& b : leaf.storages) {
      const bool entry = b.crossing == Crossing::kCreatedOutsideFreedInside ||
                         b.crossing == Crossing::kLiveThroughout;
      const bool exit = b.crossing == Crossing::kCreatedInsideFreedOutside ||
                        b.crossing == Crossing::kLiveThroughout;
      if (entry) leaf.entry_bytes += b.size;
      if (exit) leaf.exit_bytes += b.size;
      if (entry && exit) leaf.throughout_bytes += b.size;
    }
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
