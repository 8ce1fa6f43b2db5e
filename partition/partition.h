// Partition: ROAM section IV-A to IV-C (docs/partition.md). Splits a training graph into a
// subgraph tree whose leaves are contiguous blocks of one execution order, small enough for an
// exact solver, with the memory that crosses each leaf's boundary spelled out.
//
// In:  a finalized Graph, its MemoryModel, a topological order to refine (usually
//      graph.program_order) and PartitionParams.
// Out: SubgraphTree: the leaves in execution order (concatenating their ops gives a
//      topological order of the whole graph, and its theoretical peak is the maximum of the
//      leaves' peaks counted with their boundary memory, ROAM eq 1); a three-level tree
//      (root -> independent subgraphs -> dependent subgraphs); for every leaf each planned
//      storage resident during it, classified by how it crosses the leaf's boundary; and the
//      one leaf each planned storage is laid out in.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/subgraph.h"
#include "core/types.h"

namespace roam {

// Where weight-update branches run (ROAM IV-A "Memory-aware Scheduler for Weight updates").
enum class UpdatePlacement : std::uint8_t {
  kScheduled,  // ROAM eqs 4-6: from the segment where it is ready, delayed while it would raise
               // the estimated peak
  kWhenReady,  // in the segment where its inputs are ready (no delays)
  kAtEnd,      // all in the last segment, as optimizer.step() after backward() does
  kSplit,      // each branch split: the ops that consume its gradient run when ready (freeing
               // it), the tail that only makes temporaries (Adam's sqrt, div) in the last
               // segment, after the activation peak (docs/partition.md)
};
std::string_view ToString(UpdatePlacement placement);

struct PartitionParams {
  // Leaves hold at most this many ops unless one unsplittable piece is larger (then the leaf
  // says over_limit). 40: the ILP measurements' recommendation (perf/RESULTS.md, "ILP":
  // GLPK closes windows of up to about 50 ops when it closes them at all).
  int node_limit = 40;
  // ROAM eq 6: the memory of a weight-update branch is alpha times its gradient's size.
  // 0 = infer from the optimizer-phase op names: 3 (Adam/AdamW: a "sqrt" or "addcdiv" op),
  // else 1 (SGD).
  double alpha = 0;
  // ROAM's delay radius r: only branches whose gradient is more than r times the average
  // planned storage size are ever delayed.
  double delay_radius = 1.0;
  UpdatePlacement update_placement = UpdatePlacement::kScheduled;
};

// ---- Building blocks (exposed for tests and later stages) ----

// `order` lists a subset of the graph's ops in an order that is topological for the subgraph
// they induce. Returns, per position p, 1 when order[p] is memory-insensitive within that
// induced subgraph: every other op of the subset is its ancestor or its descendant through
// paths inside the subset. Linear time: order[p] is insensitive iff every op before p has a
// successor at a position <= p and every op after p has a predecessor at a position >= p.
std::vector<char> MemoryInsensitivePositions(const Dependencies& deps, std::span<const OpId> order,
                                             int num_ops);

// Effective phases: the file's phases, with unknown/other ops filled in, or wholly inferred
// when no op has a phase (rules in docs/partition.md). Never kUnknown or kOther.
struct PhaseInfo {
  std::vector<Phase> phase;  // per op
  bool inferred = false;     // no op had a phase; everything came from the rules
  OpId loss = kNoOp;         // the op inference pivoted on, when inferred
};
PhaseInfo ResolvePhases(const Graph& graph, const Dependencies& deps, std::span<const OpId> order);

// ---- The result ----

// Why an op sits where it does (docs/partition.md).
enum class OpRole : std::uint8_t {
  kSpine,           // in the memory-insensitive analysis
  kFloatingSource,  // no spine ancestor: bound to the segment of its earliest consumer
  kFloatingSink,    // a spine ancestor, no spine descendant: bound to its latest predecessor
  kFloatingBridge,  // off the spine between a spine ancestor and a spine descendant: bound to
                    // the segment the input order puts it in, clamped to what its edges allow
  kWeightUpdate,    // in a weight-update branch, placed by the weight-update scheduler
};
std::string_view ToString(OpRole role);

// How a planned storage resident during a leaf crosses its boundary: core/subgraph.h.
using LeafStorage = BoundaryStorage;

// A leaf: a contiguous block of the partition's order. A storage counts as freed when the last
// op touching it runs; output storages are never freed (they are live at the exit of every
// leaf from their creator on), exactly as in core/memory_model.h.
// A Leaf is a Subgraph: `ops` is its sub-order in the order being refined, and `storages` every
// planned storage resident at some step of the leaf (live at entry = COFI + COFO, created
// inside = inner + CIFO, live at exit = CIFO + COFO), sorted by storage id; so it goes to the
// order ILP and to SubgraphPeak (its term of ROAM eq 1) as it is.
struct Leaf : Subgraph {
  int node = -1;                            // the tree node that is this leaf
  Step first_step = 0;                      // position of ops.front() in SubgraphTree::order
  int first_segment = 0, last_segment = 0;  // spine segments it covers
  Bytes entry_bytes = 0;                    // COFI + COFO
  Bytes exit_bytes = 0;                     // CIFO + COFO
  Bytes throughout_bytes = 0;               // COFO
  std::vector<StorageId> layout;            // planned storages laid out in this leaf (ROAM's rule)
  // More ops than node_limit: one segment or weight-update branch with no inner
  // memory-insensitive op to split at.
  bool over_limit = false;
};

enum class NodeType : std::uint8_t { kRoot, kIndependent, kDependent };
std::string_view ToString(NodeType type);

// A contiguous stretch of the partition's order belonging to a node. An independent subgraph
// has two (its forward segment and the mirror backward segment, with the inner subgraphs in
// between), except the innermost one, around the loss, which is contiguous.
struct NodePart {
  Step first_step = 0, last_step = 0;  // inclusive
  int first_segment = 0, last_segment = 0;
  OpId begin_boundary = kNoOp;  // memory-insensitive op opening the first segment, if any
  OpId end_boundary = kNoOp;    // memory-insensitive op opening the segment after, if any
};

struct SubgraphNode {
  NodeType type = NodeType::kRoot;
  int parent = -1;
  std::vector<int> children;  // node ids, in execution order of their first part
  std::vector<int> leaves;    // leaf ids under (or equal to) this node, in execution order
  std::vector<NodePart> parts;
  int leaf = -1;  // leaf id when this node is a leaf
  int num_ops = 0;
  // Planned storages touched by the node's ops: inner = every touching op is inside and the
  // storage is not an output; boundary = the rest.
  int inner_storages = 0, boundary_storages = 0;
  Bytes inner_bytes = 0, boundary_bytes = 0;
};

struct WeightUpdateBranch {
  std::vector<OpId> ops;  // in the order being refined
  Bytes grad_bytes = 0;   // size_grad of ROAM eq 6
  int earliest_segment = 0;
  int segment = 0;    // where the scheduler placed it (> earliest_segment when delayed)
  bool tail = false;  // kSplit: the temporary-making tail of a branch, in the last segment
};

struct SubgraphTree {
  std::vector<SubgraphNode> nodes;  // nodes[0] is the root
  std::vector<Leaf> leaves;         // execution order
  std::vector<OpId> order;          // concatenation of the leaves' ops
  std::vector<int> leaf_of_op;      // per op
  std::vector<int> layout_leaf;     // per storage; -1 for storages that are not planned

  // The analysis behind it.
  PhaseInfo phases;
  std::vector<OpRole> role;  // per op
  // The spine's pivots (docs/partition.md): its last forward op before the backward pass (the
  // loss, or the op feeding the backward when the loss has no consumer) and its first backward
  // op (the gradient seed). kNoOp without a forward or backward pass.
  OpId forward_end = kNoOp, backward_start = kNoOp;
  std::vector<int> segment_of_op;  // per op
  std::vector<OpId> insensitive;   // memory-insensitive spine ops, in order
  int num_segments = 0;
  std::vector<WeightUpdateBranch> branches;
  double alpha = 0;          // the alpha used (params or inferred)
  Bytes estimated_peak = 0;  // esti_pm of ROAM eq 4
  int node_limit = 0;
  // Where PartitionGraph placed the weight-update branches; none for WindowPartition, which
  // keeps them where its input order has them.
  std::optional<UpdatePlacement> update_placement;
};

// Throws std::invalid_argument when order is not a topological order of all ops or
// node_limit < 1.
SubgraphTree PartitionGraph(const Graph& graph, const MemoryModel& model,
                            std::span<const OpId> order, const PartitionParams& params = {});

// A flat alternative to the tree: `order` itself cut into contiguous windows of at most
// node_limit ops, preferably just before a memory-insensitive op, each window a leaf under the
// root (no forward/backward pairing, no branches moved). For orders the tree would make worse:
// concatenating the leaves gives `order` back unchanged. Storages are classified and assigned a
// layout leaf by the same rules as PartitionGraph. Throws as PartitionGraph does.
SubgraphTree WindowPartition(const Graph& graph, const MemoryModel& model,
                             std::span<const OpId> order, const PartitionParams& params = {});

}  // namespace roam
