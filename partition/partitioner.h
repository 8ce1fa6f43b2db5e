// The partition's algorithm as one object, split across files along its steps (not part of the
// stage's interface; partition/partition.h is): partition.cpp runs it, segments.cpp finds
// the weight-update branches, the spine and its segments, and binds every other op to one;
// updates.cpp places the branches (ROAM eqs 4-6, or split); tree.cpp packs items into leaves
// and builds the subgraph tree with each leaf's boundary memory.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"
#include "partition/partition.h"

namespace roam::partition_detail {

bool ContainsNoCase(std::string_view text, std::string_view needle);
std::vector<Step> PositionsOf(std::span<const OpId> order, int num_ops);

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

  // ---- segments.cpp ----
  // Weight-update branches (docs/partition.md, "Weight-update branches").
  void FindBranches();

  bool InBranch(OpId op) const { return branch_of_[U(op)] >= 0; }

  // The spine (docs/partition.md, "The spine"): per weakly connected component of the graph
  // without the branches, the trunk from the anchors to the terminals, less the ops that hop
  // from the forward pass into the backward pass beside the loss.
  void ComputeSpine();

  // Segments of the spine, then every op off the spine bound to one (docs/partition.md,
  // "Binding the floating ops"). Branches get theirs from the scheduler.
  void ComputeSegments();

  // A branch that sums gradient contributions arriving at different times (a weight used
  // twice, such as a tied embedding) would hold the earlier contribution's computation back
  // until the later one exists. So an op the extension added whose inputs are ready in an
  // earlier segment than the data the rest of its branch reads (size-0 ordering edges do not
  // count there) goes back out as a floating sink, in the segment where it is ready, with its
  // extended ancestors (ready no later).
  void PeelBranches();

  // Floating sources: the earliest segment among their successors, in reverse order so chains
  // follow their consumer; an op without successors stays in its natural segment. Before the
  // branches are scheduled their ops do not count.
  void BindSources(bool with_branches);

  // Activations (ROAM's E_atvs): planned storages created by a forward op outside the branches
  // whose last use outside the branches is a backward op. Their creation and last-use segments
  // drive both the independent subgraphs and the weight-update scheduler.
  void FindActivations();

  // ---- updates.cpp ----
  double InferAlpha() const;

  // ROAM eqs 4-6 at segment granularity (docs/partition.md).
  void ScheduleBranches();

  // kSplit: the head of a branch is what must run to consume the memory it was handed (the
  // gradient, or what an extended op made from it) and whatever the head creates from that,
  // closed under predecessors inside the branch; it runs when ready and frees the gradient.
  // The rest only makes temporaries from persistent state and goes to the last segment. No
  // head op depends on a tail op (the head is closed under predecessors), and the tail's
  // outside inputs are all ready by the last segment, so the order stays topological.
  void SplitBranches();

  // ---- tree.cpp ----
  void BuildItems();

  int RangeSize(const SegmentRange& r) const;

  static Ranges MergeRanges(Ranges ranges);

  // Algorithm 1's independent subgraphs: grown outward from the loss, each closed so that no
  // activation crosses its boundary (created inside and freed outside or the reverse).
  std::vector<Ranges> IndependentSubgraphs() const;

  void BuildTree();

  void ClassifyStorages();

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

}  // namespace roam::partition_detail
