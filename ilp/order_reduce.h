// The order ILP's view of a subgraph (not part of the stage's interface; ilp/order_ilp.h is):
// its ops in local indices with the storages they touch, the peak of any assignment of steps,
// and the reductions made before the model is built: contraction of ops that can run as one
// block, and classes of interchangeable blocks whose order the model may fix.
#pragma once

#include <span>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/subgraph.h"
#include "core/types.h"

namespace roam::ilp::detail {

// Sorts v and drops repeats.
void Sort(std::vector<int>& v);

enum class Kind { kInternal, kIn, kOut };

// A planned storage the subgraph's ops touch or create (live_through ones are a constant).
struct SubStorage {
  StorageId sid = kNoStorage;
  Bytes size = 0;
  Kind kind = Kind::kInternal;
  bool to_end = false;        // resident to the subgraph's last step (output or live_out)
  int producer = -1;          // local op creating it; -1 for live_in
  std::vector<int> touchers;  // local ops touching it, producer excluded, sorted
};

// The subgraph in local indices 0..n-1 (sub.ops order), checked against the graph.
struct Context {
  int n = 0;
  std::vector<OpId> ops;
  std::vector<int> local_of;  // OpId -> local index or -1
  std::vector<SubStorage> storages;
  std::vector<std::vector<int>> preds, succs;  // within the subgraph
  Bytes through_bytes = 0;
};

Context BuildContext(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                     const Subgraph& sub);

// Positions (local op -> step) of an order of the subgraph's ops; throws if it is not a
// topological permutation.
std::vector<int> Positions(const Context& c, std::span<const OpId> order);

// Peak over num_steps steps when local op i runs at step[i] (several ops may share one).
Bytes PeakAtSteps(const Context& c, std::span<const int> step, int num_steps);

// Contraction into nodes (single stream). A node is a block of ops that runs contiguously;
// it keeps the local id of the op it grew from (its head).
struct Node {
  bool alive = true;
  std::vector<int> ops;           // local ops in execution order
  std::vector<int> preds, succs;  // node ids
  std::vector<int> starts;        // storage indices created by the block
  std::vector<int> touches;       // storage indices touched (starts included)
};

struct Reduced {
  std::vector<Node> nodes;                      // indexed by head; dead ones merged away
  std::vector<int> node_of_storage;             // creating node per storage, -1 for live_in
  std::vector<std::vector<int>> storage_nodes;  // touching nodes per storage (creator too)
  int contracted = 0;
  int symmetric = 0;
  std::vector<std::vector<int>> classes;  // symmetry classes, members in chain order
};

// Contracts ops into blocks by docs/ilp.md's rules 1 and 2, which never change the optimal
// peak (every op stays a node of its own when contract is false).
Reduced Contract(const Context& c, bool contract);

// Interchangeable blocks: same predecessors and successors, same storages touched but not
// created, and created storages alike in size, end and users. Swapping two of them in any
// order leaves every lifetime's length and so the profile unchanged.
void FindSymmetryClasses(const Context& c, Reduced& r);

}  // namespace roam::ilp::detail
