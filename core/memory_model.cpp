#include "core/memory_model.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "core/bytes.h"
#include "core/error.h"
#include "core/types.h"

namespace roam {
namespace {
std::string GraphName(const Graph& graph) {
  return graph.name.empty() ? std::string("the graph") : "graph " + graph.name;
}
}  // namespace

MemoryModel BuildMemoryModel(const Graph& graph, Bytes alignment) {
  if (alignment < 1 || alignment > kMaxAlignment)
    throw InputError(GraphName(graph) + ": alignment " + std::to_string(alignment) +
                     " is not in [1, " + std::to_string(kMaxAlignment) + "] bytes");
  MemoryModel model;
  model.alignment = alignment;
  const int nt = graph.num_tensors();
  model.storage_of.assign(U(nt), kNoStorage);

  std::vector<TensorId> root_of(U(nt), kNoTensor);
  for (TensorId t = 0; t < nt; ++t) {
    TensorId r = t;
    // Chains are acyclic (checked by the loader), and path compression keeps this linear.
    while (graph.tensors[U(r)].alias_of != kNoTensor && root_of[U(r)] == kNoTensor)
      r = graph.tensors[U(r)].alias_of;
    if (root_of[U(r)] != kNoTensor) r = root_of[U(r)];
    for (TensorId x = t; x != r && root_of[U(x)] == kNoTensor; x = graph.tensors[U(x)].alias_of)
      root_of[U(x)] = r;
    root_of[U(r)] = r;
  }
  // Persistent and planned bytes together: every total and offset derived from them stays
  // within kMaxBytes.
  ByteSum total;
  for (TensorId t = 0; t < nt; ++t) {
    if (root_of[U(t)] != t) continue;
    const Tensor& root = graph.tensors[U(t)];
    Storage s;
    s.root = t;
    s.members.push_back(t);  // root first
    auto aligned = AlignUpBytes(root.size, alignment);
    if (!aligned || !total.Add(*aligned))
      throw InputError(GraphName(graph) + ": tensor " + std::to_string(root.ext_id) +
                       ": its size " + std::to_string(root.size) + " aligned to " +
                       std::to_string(alignment) + (aligned ? " brings the storages' total" : "") +
                       " over roam's maximum of " + DescribeMaxBytes());
    s.size = *aligned;
    s.persistent = root.producer == kNoOp;
    model.storage_of[U(t)] = static_cast<StorageId>(model.storages.size());
    model.storages.push_back(std::move(s));
  }
  for (TensorId t = 0; t < nt; ++t) {
    StorageId sid = model.storage_of[U(root_of[U(t)])];
    model.storage_of[U(t)] = sid;
    Storage& s = model.storages[U(sid)];
    if (t != s.root) s.members.push_back(t);
    s.output = s.output || graph.tensors[U(t)].output;
  }
  for (StorageId sid = 0; sid < static_cast<StorageId>(model.storages.size()); ++sid) {
    Storage& s = model.storages[U(sid)];
    if (s.persistent) model.persistent_bytes += s.size;
    if (s.planned()) model.planned.push_back(sid);
  }

  std::vector<std::vector<StorageId>> touches(U(graph.num_ops()));
  for (TensorId t = 0; t < nt; ++t) {
    StorageId sid = model.storage_of[U(t)];
    if (!model.storages[U(sid)].planned()) continue;
    const Tensor& tensor = graph.tensors[U(t)];
    if (tensor.producer != kNoOp) touches[U(tensor.producer)].push_back(sid);
    for (OpId c : tensor.consumers) touches[U(c)].push_back(sid);
  }
  model.touch_begin.assign(U(graph.num_ops()) + 1, 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    auto& list = touches[U(op)];
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    model.touches.insert(model.touches.end(), list.begin(), list.end());
    model.touch_begin[U(op) + 1] = static_cast<int>(model.touches.size());
  }
  return model;
}

int NumSteps(std::span<const OpId> order, std::span<const Step> steps) {
  if (steps.empty() || order.empty()) return static_cast<int>(order.size());
  return steps.back() + 1;
}

std::vector<Lifetime> ComputeLifetimes(const Graph& graph, const MemoryModel& model,
                                       std::span<const OpId> order, std::span<const Step> steps) {
  std::vector<Lifetime> life(model.storages.size());
  const Step last = static_cast<Step>(NumSteps(order, steps)) - 1;
  for (size_t k = 0; k < order.size(); ++k) {
    const Step s = steps.empty() ? static_cast<Step>(k) : steps[k];
    OpId op = order[k];
    for (StorageId sid : model.Touches(op)) {
      Lifetime& l = life[U(sid)];
      if (graph.tensors[U(model.storages[U(sid)].root)].producer == op) l.start = s;
      l.end = std::max(l.end, s);
    }
  }
  for (StorageId sid : model.planned)
    if (model.storages[U(sid)].output) life[U(sid)].end = last;
  return life;
}

std::vector<Bytes> MemoryProfile(const MemoryModel& model, std::span<const Lifetime> lifetimes,
                                 int num_steps) {
  std::vector<Bytes> delta(U(num_steps) + 1, 0);
  for (StorageId sid : model.planned) {
    const Lifetime& l = lifetimes[U(sid)];
    delta[U(l.start)] += model.storages[U(sid)].size;
    delta[U(l.end) + 1] -= model.storages[U(sid)].size;
  }
  std::vector<Bytes> profile(U(num_steps));
  Bytes live = 0;
  for (int s = 0; s < num_steps; ++s) profile[U(s)] = live += delta[U(s)];
  return profile;
}

Bytes TheoreticalPeak(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
                      std::span<const Step> steps) {
  auto lifetimes = ComputeLifetimes(graph, model, order, steps);
  auto profile = MemoryProfile(model, lifetimes, NumSteps(order, steps));
  return profile.empty() ? 0 : *std::max_element(profile.begin(), profile.end());
}

std::vector<Interval> PlannedIntervals(const MemoryModel& model,
                                       std::span<const Lifetime> lifetimes) {
  std::vector<Interval> intervals;
  intervals.reserve(model.planned.size());
  for (StorageId sid : model.planned)
    intervals.push_back(
        {model.storages[U(sid)].size, lifetimes[U(sid)].start, lifetimes[U(sid)].end});
  return intervals;
}

Bytes LayoutHeight(std::span<const Interval> intervals, std::span<const Bytes> offsets) {
  Bytes height = 0;
  for (size_t i = 0; i < intervals.size(); ++i)
    height = std::max(height, offsets[i] + intervals[i].size);
  return height;
}

Bytes MaxLiveBytes(std::span<const Interval> intervals) {
  std::vector<std::pair<Step, Bytes>> events;
  events.reserve(intervals.size() * 2);
  for (const Interval& in : intervals) {
    events.emplace_back(in.start, in.size);
    events.emplace_back(in.end + 1, -in.size);
  }
  // At equal steps the frees (negative) sort first: an interval ending at s-1 is gone at s.
  std::sort(events.begin(), events.end());
  Bytes live = 0, peak = 0;
  for (const auto& [step, delta] : events) peak = std::max(peak, live += delta);
  return peak;
}

std::string CheckLayout(std::span<const Interval> intervals, std::span<const Bytes> offsets,
                        Bytes alignment) {
  std::ostringstream msg;
  if (offsets.size() != intervals.size()) {
    msg << offsets.size() << " offsets for " << intervals.size() << " buffers";
    return msg.str();
  }
  if (alignment < 1) return "alignment " + std::to_string(alignment) + " is not positive";
  for (size_t i = 0; i < intervals.size(); ++i) {
    // Checked first, so that no end (offset + size) below can overflow.
    if (!InByteRange(intervals[i].size) || !InByteRange(offsets[i]) ||
        offsets[i] > kMaxBytes - intervals[i].size) {
      msg << "buffer " << i << " at offset " << offsets[i] << " with size " << intervals[i].size
          << " ends beyond roam's maximum of " << DescribeMaxBytes();
      return msg.str();
    }
    if (offsets[i] < 0 || offsets[i] % alignment != 0) {
      msg << "buffer " << i << " has offset " << offsets[i]
          << ", which is not a non-negative multiple of the alignment " << alignment;
      return msg.str();
    }
  }
  // Sweep over steps keeping the live buffers ordered by offset. In a valid layout the live
  // set never overlaps, so checking each newcomer against its two neighbours is enough.
  std::vector<size_t> by_start(intervals.size());
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(),
            [&](size_t a, size_t b) { return intervals[a].start < intervals[b].start; });
  using Live = std::pair<Bytes, size_t>;  // offset, index
  std::set<Live> live;
  std::multiset<std::pair<Step, size_t>> ends;  // end step, index
  for (size_t i : by_start) {
    const Interval& in = intervals[i];
    if (in.size == 0) continue;
    while (!ends.empty() && ends.begin()->first < in.start) {
      live.erase({offsets[ends.begin()->second], ends.begin()->second});
      ends.erase(ends.begin());
    }
    auto it = live.lower_bound({offsets[i], 0});
    auto report = [&](size_t j) {
      msg << "buffers " << j << " [" << offsets[j] << ", " << offsets[j] + intervals[j].size
          << ") steps " << intervals[j].start << ".." << intervals[j].end << " and " << i << " ["
          << offsets[i] << ", " << offsets[i] + in.size << ") steps " << in.start << ".." << in.end
          << " overlap";
      return msg.str();
    };
    if (it != live.end() && it->first < offsets[i] + in.size) return report(it->second);
    if (it != live.begin()) {
      auto prev = std::prev(it);
      if (prev->first + intervals[prev->second].size > offsets[i]) return report(prev->second);
    }
    live.insert({offsets[i], i});
    ends.insert({in.end, i});
  }
  return {};
}

}  // namespace roam
