#include "ilp/order_reduce.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace roam::ilp::detail {

void Sort(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

namespace {

void Replace(std::vector<int>& v, int from, int to) {
  for (int& x : v)
    if (x == from) x = to;
  Sort(v);
}

void Erase(std::vector<int>& v, int x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

}  // namespace

Context BuildContext(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                     const Subgraph& sub) {
  Context c;
  c.n = static_cast<int>(sub.ops.size());
  c.ops = sub.ops;
  c.local_of.assign(U(graph.num_ops()), -1);
  for (int i = 0; i < c.n; ++i) {
    const OpId op = sub.ops[U(i)];
    if (op < 0 || op >= graph.num_ops() || c.local_of[U(op)] >= 0)
      throw std::invalid_argument("subgraph: op " + std::to_string(op) +
                                  " is out of range or repeated");
    c.local_of[U(op)] = i;
  }
  enum Listed : char { kNotListed, kListedInner, kListedIn, kListedOut, kListedThrough };
  std::vector<char> listed(model.storages.size(), kNotListed);
  for (const BoundaryStorage& b : sub.storages) {
    const StorageId sid = b.storage;
    if (sid < 0 || U(sid) >= model.storages.size() || !model.storages[U(sid)].planned() ||
        listed[U(sid)] != kNotListed)
      throw std::invalid_argument("subgraph: storage " + std::to_string(sid) +
                                  " is not planned or listed twice");
    switch (b.crossing) {
      case Crossing::kInner:
        listed[U(sid)] = kListedInner;
        break;
      case Crossing::kCreatedOutsideFreedInside:
        listed[U(sid)] = kListedIn;
        break;
      case Crossing::kCreatedInsideFreedOutside:
        listed[U(sid)] = kListedOut;
        break;
      case Crossing::kLiveThroughout:
        listed[U(sid)] = kListedThrough;
        c.through_bytes += model.storages[U(sid)].size;
        break;
    }
  }

  c.through_bytes += sub.untouched_through_bytes;
  std::vector<int> index(model.storages.size(), -1);
  auto producer_of = [&](StorageId sid) {
    OpId p = graph.tensors[U(model.storages[U(sid)].root)].producer;
    return p == kNoOp ? -1 : c.local_of[U(p)];
  };
  auto describe = [&](StorageId sid) {
    const Storage& s = model.storages[U(sid)];
    SubStorage x;
    x.sid = sid;
    x.size = s.size;
    x.producer = producer_of(sid);
    if (listed[U(sid)] == kListedIn) {
      if (x.producer >= 0)
        throw std::invalid_argument("subgraph: live-in storage " + std::to_string(sid) +
                                    " is created inside the subgraph");
      x.kind = Kind::kIn;
    } else if (listed[U(sid)] == kListedOut) {
      if (x.producer < 0)
        throw std::invalid_argument("subgraph: live-out storage " + std::to_string(sid) +
                                    " is not created inside the subgraph");
      x.kind = Kind::kOut;
    } else if (x.producer < 0) {
      throw std::invalid_argument("subgraph: storage " + std::to_string(sid) +
                                  " is created outside but not listed as live-in or "
                                  "live-throughout");
    }
    x.to_end = s.output || x.kind == Kind::kOut;
    index[U(sid)] = static_cast<int>(c.storages.size());
    c.storages.push_back(std::move(x));
  };
  for (int i = 0; i < c.n; ++i) {
    for (StorageId sid : model.Touches(sub.ops[U(i)])) {
      if (listed[U(sid)] == kListedThrough) continue;
      if (index[U(sid)] < 0) describe(sid);
      SubStorage& x = c.storages[U(index[U(sid)])];
      if (x.producer != i) x.touchers.push_back(i);
    }
  }
  for (const BoundaryStorage& b : sub.storages) {
    const StorageId sid = b.storage;
    if (listed[U(sid)] == kListedIn && index[U(sid)] < 0) {
      if (!model.storages[U(sid)].output)
        throw std::invalid_argument("subgraph: live-in storage " + std::to_string(sid) +
                                    " is not touched inside the subgraph");
      describe(sid);
    }
    if ((listed[U(sid)] == kListedOut || listed[U(sid)] == kListedInner) && index[U(sid)] < 0)
      throw std::invalid_argument("subgraph: storage " + std::to_string(sid) +
                                  " is listed as created inside but no op inside touches it");
  }
  for (SubStorage& x : c.storages) Sort(x.touchers);

  c.preds.resize(U(c.n));
  c.succs.resize(U(c.n));
  for (int i = 0; i < c.n; ++i) {
    for (OpId p : deps.Preds(sub.ops[U(i)])) {
      const int j = c.local_of[U(p)];
      if (j < 0) continue;
      c.preds[U(i)].push_back(j);
      c.succs[U(j)].push_back(i);
    }
  }
  for (auto& v : c.preds) Sort(v);
  for (auto& v : c.succs) Sort(v);
  return c;
}

std::vector<int> Positions(const Context& c, std::span<const OpId> order) {
  if (static_cast<int>(order.size()) != c.n)
    throw std::invalid_argument("subgraph order has " + std::to_string(order.size()) +
                                " ops, the subgraph " + std::to_string(c.n));
  std::vector<int> pos(U(c.n), -1);
  for (int s = 0; s < c.n; ++s) {
    const OpId op = order[U(s)];
    const int i = op >= 0 && op < static_cast<OpId>(c.local_of.size()) ? c.local_of[U(op)] : -1;
    if (i < 0 || pos[U(i)] >= 0)
      throw std::invalid_argument("subgraph order: op " + std::to_string(op) +
                                  " is not in the subgraph or repeats");
    pos[U(i)] = s;
  }
  for (int i = 0; i < c.n; ++i)
    for (int p : c.preds[U(i)])
      if (pos[U(p)] >= pos[U(i)])
        throw std::invalid_argument("subgraph order: op " + std::to_string(c.ops[U(i)]) +
                                    " runs before its predecessor " + std::to_string(c.ops[U(p)]));
  return pos;
}

Bytes PeakAtSteps(const Context& c, std::span<const int> step, int num_steps) {
  if (num_steps == 0) return 0;
  std::vector<Bytes> delta(U(num_steps) + 1, 0);
  for (const SubStorage& x : c.storages) {
    const int start = x.kind == Kind::kIn ? 0 : step[U(x.producer)];
    int end = x.kind == Kind::kIn ? 0 : start;
    for (int t : x.touchers) end = std::max(end, step[U(t)]);
    if (x.to_end) end = num_steps - 1;
    delta[U(start)] += x.size;
    delta[U(end) + 1] -= x.size;
  }
  Bytes live = 0, peak = 0;
  for (int s = 0; s < num_steps; ++s) peak = std::max(peak, live += delta[U(s)]);
  return peak + c.through_bytes;
}

Reduced Contract(const Context& c, bool contract) {
  Reduced r;
  r.nodes.resize(U(c.n));
  r.node_of_storage.assign(c.storages.size(), -1);
  r.storage_nodes.resize(c.storages.size());
  for (int i = 0; i < c.n; ++i) {
    r.nodes[U(i)].ops = {i};
    r.nodes[U(i)].preds = c.preds[U(i)];
    r.nodes[U(i)].succs = c.succs[U(i)];
  }
  for (int k = 0; k < static_cast<int>(c.storages.size()); ++k) {
    const SubStorage& x = c.storages[U(k)];
    if (x.producer >= 0) {
      r.node_of_storage[U(k)] = x.producer;
      r.nodes[U(x.producer)].starts.push_back(k);
      r.nodes[U(x.producer)].touches.push_back(k);
      r.storage_nodes[U(k)].push_back(x.producer);
    }
    for (int t : x.touchers) {
      r.nodes[U(t)].touches.push_back(k);
      r.storage_nodes[U(k)].push_back(t);
    }
  }
  for (Node& node : r.nodes) {
    Sort(node.starts);
    Sort(node.touches);
  }
  for (auto& v : r.storage_nodes) Sort(v);

  // Merges node `from` into node `into`; the block of `from` goes after (rule 1) or before
  // (rule 2) the block of `into`.
  auto merge = [&](int from, int into, bool after) {
    Node& f = r.nodes[U(from)];
    Node& t = r.nodes[U(into)];
    if (after)
      t.ops.insert(t.ops.end(), f.ops.begin(), f.ops.end());
    else
      t.ops.insert(t.ops.begin(), f.ops.begin(), f.ops.end());
    for (int p : f.preds)
      if (p != into) {
        Replace(r.nodes[U(p)].succs, from, into);
        t.preds.push_back(p);
      }
    for (int s : f.succs)
      if (s != into) {
        Replace(r.nodes[U(s)].preds, from, into);
        t.succs.push_back(s);
      }
    Erase(t.preds, from);
    Erase(t.succs, from);
    Sort(t.preds);
    Sort(t.succs);
    for (int k : f.starts) r.node_of_storage[U(k)] = into;
    for (int k : f.touches) Replace(r.storage_nodes[U(k)], from, into);
    t.starts.insert(t.starts.end(), f.starts.begin(), f.starts.end());
    t.touches.insert(t.touches.end(), f.touches.begin(), f.touches.end());
    Sort(t.starts);
    Sort(t.touches);
    f = Node{};
    f.alive = false;
    ++r.contracted;
  };

  for (bool changed = contract; changed;) {
    changed = false;
    for (int v = 0; v < c.n; ++v) {
      Node& node = r.nodes[U(v)];
      if (!node.alive) continue;
      // Rule 1: a block creating nothing, with one predecessor, runs right after it.
      if (node.starts.empty() && node.preds.size() == 1) {
        merge(v, node.preds[0], true);
        changed = true;
        continue;
      }
      // Rule 2: a block touching only what it creates, all of it still needed by its one
      // successor (or to the end), runs right before that successor.
      if (node.succs.size() != 1 || node.starts.empty() || node.touches != node.starts) continue;
      const int s = node.succs[0];
      bool needed = true;
      for (int k : node.starts) {
        const auto& users = r.storage_nodes[U(k)];
        if (!c.storages[U(k)].to_end && !std::binary_search(users.begin(), users.end(), s))
          needed = false;
      }
      if (needed) {
        merge(v, s, false);
        changed = true;
      }
    }
  }

  return r;
}

void FindSymmetryClasses(const Context& c, Reduced& r) {
  std::map<std::vector<std::int64_t>, std::vector<int>> by_key;
  for (int v = 0; v < c.n; ++v) {
    const Node& node = r.nodes[U(v)];
    if (!node.alive) continue;
    std::vector<std::int64_t> key;
    auto put = [&](const std::vector<int>& xs) {
      key.push_back(static_cast<std::int64_t>(xs.size()));
      key.insert(key.end(), xs.begin(), xs.end());
    };
    put(node.preds);
    put(node.succs);
    std::vector<int> foreign;
    std::set_difference(node.touches.begin(), node.touches.end(), node.starts.begin(),
                        node.starts.end(), std::back_inserter(foreign));
    put(foreign);
    std::vector<std::vector<std::int64_t>> created;
    for (int k : node.starts) {
      std::vector<std::int64_t> d = {c.storages[U(k)].size, c.storages[U(k)].to_end};
      for (int u : r.storage_nodes[U(k)])
        if (u != v) d.push_back(u);
      created.push_back(std::move(d));
    }
    std::sort(created.begin(), created.end());
    for (auto& d : created) {
      key.push_back(static_cast<std::int64_t>(d.size()));
      key.insert(key.end(), d.begin(), d.end());
    }
    by_key[key].push_back(v);
  }
  for (auto& [key, members] : by_key) {
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end(),
              [&](int a, int b) { return c.ops[U(a)] < c.ops[U(b)]; });
    r.classes.push_back(members);
  }
}

}  // namespace roam::ilp::detail
