// The partition's structure (docs/partition.md): the weight-update branches, the spine and its
// segments, every other op bound to a segment, and the activations crossing segments.
#include <algorithm>
#include <numeric>

#include "partition/partitioner.h"

namespace roam::partition_detail {
namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(U(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[U(x)] != x) x = parent[U(x)] = parent[U(parent[U(x)])];
    return x;
  }
  void Join(int a, int b) { parent[U(Find(a))] = Find(b); }
};

}  // namespace

void Partitioner::FindBranches() {
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

void Partitioner::ComputeSpine() {
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

void Partitioner::ComputeSegments() {
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
      lo_[U(op)] =
          std::max(lo_[U(op)], RoleOf(p) == OpRole::kSpine ? tree_.segment_of_op[U(p)] : lo_[U(p)]);
  }
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    OpId op = *it;
    if (InBranch(op) || RoleOf(op) == OpRole::kSpine) continue;
    for (OpId s : deps_.Succs(op))
      if (!InBranch(s))
        hi_[U(op)] = std::min(hi_[U(op)],
                              RoleOf(s) == OpRole::kSpine ? tree_.segment_of_op[U(s)] : hi_[U(s)]);
  }
  for (OpId op = 0; op < n_; ++op) {
    if (InBranch(op) || RoleOf(op) == OpRole::kSpine) continue;
    tree_.role[U(op)] = lo_[U(op)] < 0   ? OpRole::kFloatingSource
                        : hi_[U(op)] < m ? OpRole::kFloatingBridge
                                         : OpRole::kFloatingSink;
  }
  // Bridges: their natural segment clamped to [lo, hi] (lo <= hi: docs). Sinks: their natural
  // segment, or later where a predecessor with a spine ancestor was placed later, in order.
  // Not the predecessors' latest segment: a backward sink fed only by a forward op (RMSNorm's
  // pow of the saved rsqrt) would run in the forward pass and hold its output across the
  // activation peak until its consumer in the backward.
  for (OpId op : order_) {
    if (RoleOf(op) == OpRole::kFloatingBridge) {
      tree_.segment_of_op[U(op)] = std::clamp(natural_[U(op)], lo_[U(op)], hi_[U(op)]);
    } else if (RoleOf(op) == OpRole::kFloatingSink) {
      int s = natural_[U(op)];
      for (OpId p : deps_.Preds(op))
        if (RoleOf(p) != OpRole::kFloatingSource) s = std::max(s, tree_.segment_of_op[U(p)]);
      tree_.segment_of_op[U(op)] = s;
    }
  }
}

void Partitioner::PeelBranches() {
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
    // A handed-back sink runs where the input order has it, or later when it is ready later:
    // never earlier, where its output would wait for its consumers (the sink rule above).
    const bool sink = ready[U(op)] >= 0;
    tree_.role[U(op)] = sink ? OpRole::kFloatingSink : OpRole::kFloatingSource;
    tree_.segment_of_op[U(op)] = sink ? std::max(ready[U(op)], natural_[U(op)]) : 0;
    peeled = true;
  }
  if (!peeled) return;
  for (WeightUpdateBranch& branch : tree_.branches)
    std::erase_if(branch.ops, [&](OpId op) { return !InBranch(op); });
}

void Partitioner::BindSources(bool with_branches) {
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    OpId op = *it;
    if (RoleOf(op) != OpRole::kFloatingSource) continue;
    int s = num_segments_;
    for (OpId succ : deps_.Succs(op))
      if (with_branches || !InBranch(succ)) s = std::min(s, tree_.segment_of_op[U(succ)]);
    tree_.segment_of_op[U(op)] = s < num_segments_ ? s : natural_[U(op)];
  }
}

void Partitioner::FindActivations() {
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

}  // namespace roam::partition_detail
