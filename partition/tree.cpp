// From segments to the subgraph tree (docs/partition.md, ROAM IV-B/C): items packed into
// leaves under node_limit, Algorithm 1's independent subgraphs, and each leaf's boundary memory.
#include <algorithm>

#include "partition/partitioner.h"

namespace roam::partition_detail {

void Partitioner::BuildItems() {
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

int Partitioner::RangeSize(const SegmentRange& r) const {
  int size = 0;
  for (int s = r.first; s <= r.second; ++s) size += seg_size_[U(s)];
  return size;
}

Ranges Partitioner::MergeRanges(Ranges ranges) {
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

std::vector<Ranges> Partitioner::IndependentSubgraphs() const {
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

void Partitioner::BuildTree() {
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
  std::sort(pending.begin(), pending.end(),
            [](const PendingLeaf& a, const PendingLeaf& b) { return a.item_begin < b.item_begin; });

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

void Partitioner::ClassifyStorages() {
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
    for (StorageId sid : model_.Touches(op)) touching[U(fill[U(sid)]++)] = tree_.leaf_of_op[U(op)];

  // The leaves are consecutive windows of the tree's order: classified as such, in linear
  // time (core/subgraph.h; untouched live-throughout storages are counted, not listed).
  std::vector<int> cuts;
  for (const Leaf& leaf : tree_.leaves) cuts.push_back(leaf.first_step);
  cuts.push_back(static_cast<int>(tree_.order.size()));
  std::vector<Subgraph> windows;
  if (nl > 0) windows = OrderWindows(graph_, model_, tree_.order, cuts);
  for (int l = 0; l < nl; ++l) {
    Leaf& leaf = tree_.leaves[U(l)];
    leaf.storages = std::move(windows[U(l)].storages);
    leaf.untouched_through_bytes = windows[U(l)].untouched_through_bytes;
    leaf.untouched_through_count = windows[U(l)].untouched_through_count;
    leaf.entry_bytes = leaf.EntryBytes();
    leaf.exit_bytes = leaf.ExitBytes();
    leaf.throughout_bytes = leaf.ThroughoutBytes();
  }

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
    // ROAM's rule: what the forward pass creates is laid out where it is freed; what the
    // backward pass or the optimizer creates, where it is created.
    int layout = created;
    if (!storage.output && freed != created && PhaseOf(creator) == Phase::kForward) layout = freed;
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

}  // namespace roam::partition_detail
