#include "core/subgraph.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/types.h"

namespace roam {
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

Bytes Subgraph::EntryBytes() const {
  Bytes sum = untouched_through_bytes;
  for (const BoundaryStorage& b : storages)
    if (b.crossing == Crossing::kCreatedOutsideFreedInside ||
        b.crossing == Crossing::kLiveThroughout)
      sum += b.size;
  return sum;
}

Bytes Subgraph::ExitBytes() const {
  Bytes sum = untouched_through_bytes;
  for (const BoundaryStorage& b : storages)
    if (b.crossing == Crossing::kCreatedInsideFreedOutside ||
        b.crossing == Crossing::kLiveThroughout)
      sum += b.size;
  return sum;
}

Bytes Subgraph::ThroughoutBytes() const {
  Bytes sum = untouched_through_bytes;
  for (const BoundaryStorage& b : storages)
    if (b.crossing == Crossing::kLiveThroughout) sum += b.size;
  return sum;
}

Subgraph OrderWindow(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
                     int begin, int end) {
  if (begin < 0 || end < begin || end > static_cast<int>(order.size()))
    throw std::invalid_argument("OrderWindow: bad range");
  std::vector<int> cuts = {0};
  for (int c : {begin, end, static_cast<int>(order.size())})
    if (c > cuts.back()) cuts.push_back(c);
  if (begin == end) {
    // An empty window: nothing touched, every storage live across it counted as through.
    Subgraph sub;
    const auto life = ComputeLifetimes(graph, model, order);
    for (StorageId sid : model.planned)
      if (life[U(sid)].start < begin &&
          (life[U(sid)].end >= end || model.storages[U(sid)].output)) {
        sub.untouched_through_bytes += model.storages[U(sid)].size;
        ++sub.untouched_through_count;
      }
    return sub;
  }
  std::vector<Subgraph> windows = OrderWindows(graph, model, order, cuts);
  for (size_t w = 0; w + 1 < cuts.size(); ++w)
    if (cuts[w] == begin) return std::move(windows[w]);
  throw std::logic_error("OrderWindow: window not found");
}

std::vector<Subgraph> OrderWindows(const Graph& graph, const MemoryModel& model,
                                   std::span<const OpId> order, std::span<const int> cuts) {
  const int n = static_cast<int>(order.size());
  if (n == 0 && cuts.size() >= 2 && cuts.front() == 0 && cuts.back() == 0)
    return std::vector<Subgraph>(cuts.size() - 1);  // empty windows of an empty order
  if (cuts.size() < 2 || cuts.front() != 0 || cuts.back() != n)
    throw std::invalid_argument("OrderWindows: cuts must run from 0 to the order's length");
  for (size_t w = 0; w + 1 < cuts.size(); ++w)
    if (cuts[w] >= cuts[w + 1])
      throw std::invalid_argument("OrderWindows: cuts must rise strictly");
  const int nw = static_cast<int>(cuts.size()) - 1;
  std::vector<int> window_of(U(n));
  for (int w = 0; w < nw; ++w)
    for (int s = cuts[U(w)]; s < cuts[U(w) + 1]; ++s) window_of[U(s)] = w;
  const auto life = ComputeLifetimes(graph, model, order);
  const int last = n - 1;

  std::vector<Subgraph> windows(U(nw));
  // Untouched live-throughout storages: a difference array over windows, then the touched
  // ones (listed below) taken back out.
  std::vector<Bytes> through_bytes(U(nw) + 1, 0);
  std::vector<int> through_count(U(nw) + 1, 0);
  for (StorageId sid : model.planned) {
    const Storage& s = model.storages[U(sid)];
    const int created = window_of[U(life[U(sid)].start)];
    // Windows strictly after the creator's and before the one that frees it (outputs: none
    // frees them, even at the last step).
    const int freed = s.output ? nw : window_of[U(life[U(sid)].end)];
    if (freed > created + 1) {
      through_bytes[U(created) + 1] += s.size;
      through_bytes[U(freed)] -= s.size;
      ++through_count[U(created) + 1];
      --through_count[U(freed)];
    }
  }
  std::vector<int> listed_in(model.storages.size(), -1);
  for (int w = 0; w < nw; ++w) {
    Subgraph& sub = windows[U(w)];
    const int begin = cuts[U(w)], end = cuts[U(w) + 1];
    sub.ops.assign(order.begin() + begin, order.begin() + end);
    for (int step = begin; step < end; ++step) {
      for (StorageId sid : model.Touches(order[U(step)])) {
        if (listed_in[U(sid)] == w) continue;
        listed_in[U(sid)] = w;
        const Storage& s = model.storages[U(sid)];
        const Lifetime& l = life[U(sid)];
        // An output is never freed: even when it lives to the last step of the whole order, a
        // window ending there holds it as created-inside-freed-outside.
        const bool before = l.start < begin, after = l.end >= end || (s.output && l.end == last);
        const Crossing c =
            before ? (after ? Crossing::kLiveThroughout : Crossing::kCreatedOutsideFreedInside)
                   : (after ? Crossing::kCreatedInsideFreedOutside : Crossing::kInner);
        sub.storages.push_back({sid, s.size, c});
        if (c == Crossing::kLiveThroughout) {
          through_bytes[U(w)] -= s.size;
          through_bytes[U(w) + 1] += s.size;
          --through_count[U(w)];
          ++through_count[U(w) + 1];
        }
      }
    }
    std::sort(
        sub.storages.begin(), sub.storages.end(),
        [](const BoundaryStorage& a, const BoundaryStorage& b) { return a.storage < b.storage; });
  }
  Bytes bytes = 0;
  int count = 0;
  for (int w = 0; w < nw; ++w) {
    windows[U(w)].untouched_through_bytes = bytes += through_bytes[U(w)];
    windows[U(w)].untouched_through_count = count += through_count[U(w)];
  }
  return windows;
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
  Bytes live = sub.untouched_through_bytes, peak = 0;
  for (int step = 0; step < k; ++step) peak = std::max(peak, live += delta[U(step)]);
  return peak;
}

}  // namespace roam
