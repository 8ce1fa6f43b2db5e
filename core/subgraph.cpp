#include "core/subgraph.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace roam {
namespace {
size_t U(int i) { return static_cast<size_t>(i); }
}  // namespace

std::string_view ToString(Crossing crossing) {
  switch (crossing) {
    case Crossing::kInner:
      return "inner";
    case Crossing::kCreatedInsideFreedOutside:
      return "created-inside-freed-outside";
    case Crossing::kCreatedOutsideFreedInside:
      return "created-outside-freed-inside";
    case Crossing::kLiveThroughout:
      return "live-throughout";
  }
  return "";
}

Subgraph WholeGraph(const Graph& graph, const MemoryModel& model) {
  Subgraph sub;
  sub.ops = graph.program_order;
  for (StorageId sid = 0; sid < static_cast<StorageId>(model.storages.size()); ++sid) {
    const Storage& s = model.storages[U(sid)];
    if (!s.planned()) continue;
    sub.storages.push_back(
        {sid, s.size, s.output ? Crossing::kCreatedInsideFreedOutside : Crossing::kInner});
  }
  return sub;
}

Subgraph OrderWindow(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
                     int begin, int end) {
  if (begin < 0 || end < begin || end > static_cast<int>(order.size()))
    throw std::invalid_argument("OrderWindow: bad range");
  Subgraph sub;
  sub.ops.assign(order.begin() + begin, order.begin() + end);
  const auto life = ComputeLifetimes(graph, model, order);
  const int last = static_cast<int>(order.size()) - 1;
  for (StorageId sid = 0; sid < static_cast<StorageId>(model.storages.size()); ++sid) {
    const Storage& s = model.storages[U(sid)];
    if (!s.planned()) continue;
    const Lifetime& l = life[U(sid)];
    if (l.end < begin || l.start >= end) continue;
    // An output is never freed: even when it lives to the last step of the whole order, a
    // window ending there holds it as created-inside-freed-outside.
    const bool before = l.start < begin, after = l.end >= end || (s.output && l.end == last);
    const Crossing c =
        before ? (after ? Crossing::kLiveThroughout : Crossing::kCreatedOutsideFreedInside)
               : (after ? Crossing::kCreatedInsideFreedOutside : Crossing::kInner);
    sub.storages.push_back({sid, s.size, c});
  }
  return sub;
}

Bytes SubgraphPeak(const Graph& graph, const MemoryModel& model, const Subgraph& sub,
                   std::span<const OpId> order) {
  const int k = static_cast<int>(order.size());
  if (k != static_cast<int>(sub.ops.size()))
    throw std::invalid_argument("SubgraphPeak: the order has " + std::to_string(k) +
                                " ops, the subgraph " + std::to_string(sub.ops.size()));
  if (k == 0) return 0;
  std::unordered_map<StorageId, int> index;
  index.reserve(sub.storages.size());
  std::vector<int> start(sub.storages.size()), end(sub.storages.size());
  for (size_t i = 0; i < sub.storages.size(); ++i) {
    index.emplace(sub.storages[i].storage, static_cast<int>(i));
    const Crossing c = sub.storages[i].crossing;
    const bool entry = c == Crossing::kCreatedOutsideFreedInside || c == Crossing::kLiveThroughout;
    const bool exit = c == Crossing::kCreatedInsideFreedOutside || c == Crossing::kLiveThroughout;
    start[i] = entry ? 0 : k;  // created inside: set at the creator's step below
    end[i] = exit ? k - 1 : -1;
  }
  for (int step = 0; step < k; ++step) {
    const OpId op = order[U(step)];
    for (StorageId sid : model.Touches(op)) {
      auto it = index.find(sid);
      if (it == index.end())
        throw std::invalid_argument("SubgraphPeak: op " + std::to_string(op) + " touches storage " +
                                    std::to_string(sid) + ", which the subgraph does not list");
      const size_t i = U(it->second);
      if (graph.tensors[U(model.storages[U(sid)].root)].producer == op) start[i] = step;
      end[i] = std::max(end[i], step);
    }
  }
  std::vector<Bytes> delta(U(k) + 1, 0);
  for (size_t i = 0; i < sub.storages.size(); ++i) {
    if (start[i] > end[i])
      throw std::invalid_argument("SubgraphPeak: storage " +
                                  std::to_string(sub.storages[i].storage) +
                                  " has an empty lifetime inside the subgraph");
    delta[U(start[i])] += sub.storages[i].size;
    delta[U(end[i]) + 1] -= sub.storages[i].size;
  }
  Bytes live = 0, peak = 0;
  for (int step = 0; step < k; ++step) peak = std::max(peak, live += delta[U(step)]);
  return peak;
}

}  // namespace roam
