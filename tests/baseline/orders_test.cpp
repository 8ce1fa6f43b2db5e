#include "baseline/orders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/io.h"
#include "core/types.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

// Builds small graphs by hand; ops and tensors get external id = index.
class HandGraph {
 public:
  OpId AddOp() {
    graph_.ops.push_back(
        Op{static_cast<ExternalId>(graph_.ops.size()), "op", Phase::kUnknown, {}, {}});
    return static_cast<OpId>(graph_.ops.size() - 1);
  }
  TensorId AddTensor(Bytes size, OpId producer, std::vector<OpId> consumers,
                     TensorId alias_of = kNoTensor, bool output = false) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(graph_.tensors.size());
    t.size = size;
    t.producer = producer;
    t.consumers = std::move(consumers);
    t.alias_of = alias_of;
    t.output = output;
    graph_.tensors.push_back(t);
    return static_cast<TensorId>(graph_.tensors.size() - 1);
  }
  Graph Build(std::vector<OpId> program_order) {
    graph_.name = "hand";
    graph_.program_order = std::move(program_order);
    Finalize(graph_, "hand");
    return graph_;
  }

 private:
  Graph graph_;
};

std::vector<OpId> Order(std::string_view name, const Graph& graph, Bytes alignment = 512) {
  return ScheduleOrder(name, graph, BuildMemoryModel(graph, alignment));
}

// Reference LESCEA / XLA list scheduler recomputing every ready op's delta from scratch at
// each step: what the incremental version must reproduce exactly.
std::vector<OpId> NaiveListSchedule(const Graph& graph, const MemoryModel& model,
                                    bool producer_is_use, bool users_tiebreak) {
  const int n = graph.num_ops();
  Dependencies deps = BuildDependencies(graph);
  std::vector<Step> position(U(n));
  for (size_t s = 0; s < graph.program_order.size(); ++s)
    position[U(graph.program_order[s])] = static_cast<Step>(s);
  std::vector<char> done(U(n), 0);
  auto producer = [&](StorageId sid) {
    return graph.tensors[U(model.storages[U(sid)].root)].producer;
  };
  auto users = [&](OpId op) {
    std::vector<OpId> list;
    for (TensorId t : graph.ops[U(op)].outputs)
      if (graph.tensors[U(t)].size > 0)
        for (OpId c : graph.tensors[U(t)].consumers)
          if (c != op) list.push_back(c);
    std::sort(list.begin(), list.end());
    return static_cast<int>(std::unique(list.begin(), list.end()) - list.begin());
  };
  std::vector<OpId> order;
  while (static_cast<int>(order.size()) < n) {
    OpId best = kNoOp;
    std::tuple<Bytes, int, Step> best_key;
    for (OpId op = 0; op < n; ++op) {
      if (done[U(op)]) continue;
      auto preds = deps.Preds(op);
      if (!std::all_of(preds.begin(), preds.end(), [&](OpId p) { return done[U(p)] != 0; }))
        continue;
      Bytes delta = 0;
      for (StorageId sid : model.Touches(op)) {
        const Storage& s = model.storages[U(sid)];
        if (producer(sid) == op) delta += s.size;
        if (!producer_is_use && producer(sid) == op) continue;
        if (s.output) continue;
        bool last = true;
        for (OpId other = 0; other < n && last; ++other) {
          if (other == op || done[U(other)]) continue;
          if (!producer_is_use && producer(sid) == other) continue;
          auto touches = model.Touches(other);
          last = std::find(touches.begin(), touches.end(), sid) == touches.end();
        }
        if (last) delta -= s.size;
      }
      std::tuple<Bytes, int, Step> key{delta, users_tiebreak ? -users(op) : 0, position[U(op)]};
      if (best == kNoOp || key < best_key) {
        best = op;
        best_key = key;
      }
    }
    done[U(best)] = 1;
    order.push_back(best);
  }
  return order;
}

TEST(Orders, ProgramOrderIsTheGraphsOwn) {
  Graph graph = LoadGraph(testing::DataPath("tiny.graph.json"));
  EXPECT_EQ(Order("program", graph), graph.program_order);
}

TEST(Orders, UnknownNameIsAnInputError) {
  Graph graph = LoadGraph(testing::DataPath("tiny.graph.json"));
  EXPECT_THROW(Order("greedy", graph), InputError);
}

TEST(Orders, EveryOrderIsTopologicalOnTheGoldenGraph) {
  Graph graph = LoadGraph(testing::DataPath("tiny.graph.json"));
  Dependencies deps = BuildDependencies(graph);
  for (std::string_view name : OrderNames())
    EXPECT_EQ(CheckTopological(graph, deps, Order(name, graph)), "") << name;
}

TEST(Orders, EveryOrderIsTopologicalAndDeterministicOnRandomGraphs) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 40;
    options.zero_prob = trial % 3 == 0 ? 0.4 : 0.15;
    options.alias_prob = trial % 2 == 0 ? 0.4 : 0.1;
    Graph graph = testing::RandomGraph(rng, options);
    Dependencies deps = BuildDependencies(graph);
    MemoryModel model = BuildMemoryModel(graph);
    for (std::string_view name : OrderNames()) {
      auto order = ScheduleOrder(name, graph, model);
      ASSERT_EQ(CheckTopological(graph, deps, order), "") << name << " trial " << trial;
      ASSERT_EQ(order, ScheduleOrder(name, graph, model)) << name << " trial " << trial;
    }
  }
}

TEST(Orders, IncrementalListSchedulersMatchFromScratchReferences) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 2 + trial % 30;
    options.max_inputs = 1 + trial % 4;
    options.output_prob = trial % 4 == 0 ? 0.4 : 0.1;
    Graph graph = testing::RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    ASSERT_EQ(ScheduleOrder("lescea", graph, model), NaiveListSchedule(graph, model, true, false))
        << "trial " << trial;
    ASSERT_EQ(ScheduleOrder("xla-list", graph, model), NaiveListSchedule(graph, model, false, true))
        << "trial " << trial;
  }
}

TEST(Orders, HeuristicIsNoWorseThanEachGreedyOrder) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 5 + trial % 50;
    Graph graph = testing::RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    const Bytes best = TheoreticalPeak(graph, model, ScheduleOrder("heuristic", graph, model));
    bool matches_one = false;
    for (std::string_view name : {"lescea", "xla-list", "xla-dfs"}) {
      const Bytes peak = TheoreticalPeak(graph, model, ScheduleOrder(name, graph, model));
      EXPECT_LE(best, peak) << name << " trial " << trial;
      matches_one = matches_one || best == peak;
    }
    EXPECT_TRUE(matches_one) << "trial " << trial;
  }
}

TEST(Orders, GreedyOrdersNeverBeatTheBruteForceOptimum) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 60; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 6;
    Graph graph = testing::RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    const Bytes optimum = testing::BruteForceMinPeak(graph, model);
    for (std::string_view name : OrderNames())
      EXPECT_GE(TheoreticalPeak(graph, model, ScheduleOrder(name, graph, model)), optimum) << name;
  }
}

// Two independent producers whose outputs each feed one consumer: after the first producer,
// LESCEA must run the consumer that frees its input before starting the other chain.
TEST(Lescea, RunsTheReadyOpThatIncreasesMemoryLeast) {
  HandGraph h;
  OpId a = h.AddOp(), b = h.AddOp(), c = h.AddOp(), d = h.AddOp();
  h.AddTensor(2048, a, {c});
  h.AddTensor(1024, b, {d});
  h.AddTensor(512, c, {}, kNoTensor, true);
  h.AddTensor(512, d, {}, kNoTensor, true);
  Graph graph = h.Build({a, b, c, d});
  // b (+1024) before a (+2048); then d (+512 - 1024) before a.
  EXPECT_EQ(Order("lescea", graph), (std::vector<OpId>{b, d, a, c}));
}

TEST(Lescea, BreaksTiesByProgramPosition) {
  HandGraph h;
  OpId a = h.AddOp(), b = h.AddOp();
  h.AddTensor(1024, a, {}, kNoTensor, true);
  h.AddTensor(1024, b, {}, kNoTensor, true);
  EXPECT_EQ(Order("lescea", h.Build({b, a})), (std::vector<OpId>{b, a}));
  HandGraph g;
  a = g.AddOp();
  b = g.AddOp();
  g.AddTensor(1024, a, {}, kNoTensor, true);
  g.AddTensor(1024, b, {}, kNoTensor, true);
  EXPECT_EQ(Order("lescea", g.Build({a, b})), (std::vector<OpId>{a, b}));
}

// The last reader of a tensor frees it: once the other reader has run, the remaining one's
// gain must be seen, and it runs before an op that only allocates.
TEST(Lescea, UpdatesAnOpsGainWhenItBecomesTheLastReader) {
  HandGraph h;
  OpId src = h.AddOp(), r1 = h.AddOp(), r2 = h.AddOp(), other = h.AddOp(), sink = h.AddOp();
  h.AddTensor(2048, src, {r1, r2});
  h.AddTensor(0, src, {other});  // ordering only: other waits for src
  TensorId v = h.AddTensor(1024, r2, {sink});
  TensorId w = h.AddTensor(512, other, {sink});
  (void)v;
  (void)w;
  Graph graph = h.Build({src, r1, other, r2, sink});
  // After r1, r2 frees 2048 and allocates 1024 (-1024), other allocates 512.
  EXPECT_EQ(Order("lescea", graph), (std::vector<OpId>{src, r1, r2, other, sink}));
}

TEST(Lescea, CountsAnUnreadOutputAsFreedAtOnceButNeverAGraphOutput) {
  HandGraph h;
  OpId a = h.AddOp(), b = h.AddOp(), c = h.AddOp();
  h.AddTensor(4096, a, {});  // nobody reads it: allocated and freed by a, net 0
  h.AddTensor(1024, b, {c});
  Graph graph = h.Build({b, c, a});
  EXPECT_EQ(Order("lescea", graph), (std::vector<OpId>{a, b, c}));

  HandGraph g;
  a = g.AddOp();
  b = g.AddOp();
  c = g.AddOp();
  g.AddTensor(4096, a, {}, kNoTensor, /*output=*/true);  // resident to the end: +4096
  g.AddTensor(1024, b, {c});
  EXPECT_EQ(Order("lescea", g.Build({a, b, c})), (std::vector<OpId>{b, c, a}));
}

// An in-place update shares its input's storage: the storage is freed by the last op touching
// any member, not by the last reader of the root.
TEST(Lescea, TreatsAnAliasGroupAsOneStorage) {
  HandGraph h;
  OpId make = h.AddOp(), inplace = h.AddOp(), read = h.AddOp(), other = h.AddOp();
  TensorId x = h.AddTensor(2048, make, {inplace});
  h.AddTensor(2048, inplace, {read}, x);  // x updated in place
  h.AddTensor(0, make, {other});
  h.AddTensor(1024, other, {}, kNoTensor, true);
  Graph graph = h.Build({make, other, inplace, read});
  // inplace allocates nothing (alias) and frees nothing (read still touches the group): 0;
  // other: +1024. So inplace, then read (frees 2048), then other.
  EXPECT_EQ(Order("lescea", graph), (std::vector<OpId>{make, inplace, read, other}));
}

TEST(XlaList, PrefersMoreUsersWhenBytesTie) {
  HandGraph h;
  OpId one_user = h.AddOp(), two_users = h.AddOp(), u1 = h.AddOp(), u2 = h.AddOp(), u3 = h.AddOp();
  h.AddTensor(1024, one_user, {u1});
  h.AddTensor(1024, two_users, {u2, u3});
  Graph graph = h.Build({one_user, two_users, u1, u2, u3});
  std::vector<OpId> order = Order("xla-list", graph);
  EXPECT_EQ(order.front(), two_users);
  EXPECT_EQ(Order("lescea", graph).front(), one_user);  // LESCEA ties by position instead
}

// XLA counts uses only: an output nobody reads is defined and never freed, so the scheduler
// postpones its producer; LESCEA sees it allocated and freed at once and runs it first.
TEST(XlaList, NeverFreesAnUnreadOutput) {
  HandGraph h;
  OpId a = h.AddOp(), b = h.AddOp(), c = h.AddOp();
  h.AddTensor(4096, a, {});
  h.AddTensor(1024, b, {c});
  Graph graph = h.Build({a, b, c});
  EXPECT_EQ(Order("xla-list", graph), (std::vector<OpId>{b, c, a}));
  EXPECT_EQ(Order("lescea", graph), (std::vector<OpId>{a, b, c}));
}

TEST(XlaList, RunsTheOpFreeingTheMostBytesNetFirst) {
  HandGraph h;
  OpId big = h.AddOp(), small = h.AddOp(), free_big = h.AddOp(), free_small = h.AddOp();
  h.AddTensor(4096, big, {free_big});
  h.AddTensor(1024, small, {free_small});
  Graph graph = h.Build({big, small, free_small, free_big});
  // small (-1024) first, then free_small (+1024) beats big (-4096); then big, free_big.
  EXPECT_EQ(Order("xla-list", graph), (std::vector<OpId>{small, free_small, big, free_big}));
}

// join reads a (two users, so one extra user) and b (larger, no extra users): the DFS visits
// the operand with more extra users first even though the other feeds more bytes.
TEST(XlaDfs, VisitsOperandsWithMoreExtraUsersFirst) {
  HandGraph h;
  OpId a = h.AddOp(), b = h.AddOp(), join = h.AddOp(), side = h.AddOp();
  h.AddTensor(1024, a, {join, side});
  h.AddTensor(4096, b, {join});
  h.AddTensor(512, join, {}, kNoTensor, true);
  h.AddTensor(512, side, {}, kNoTensor, true);
  Graph graph = h.Build({b, a, side, join});
  // Sinks join (extra 1, 5632 bytes) and side (extra 1, 1536 bytes): join's subgraph first.
  EXPECT_EQ(Order("xla-dfs", graph), (std::vector<OpId>{a, b, join, side}));
}

TEST(XlaDfs, VisitsLargerAccumulatedSizeFirstWhenExtraUsersTie) {
  HandGraph h;
  OpId small = h.AddOp(), big = h.AddOp(), mid = h.AddOp(), join = h.AddOp();
  h.AddTensor(1024, small, {join});
  TensorId t = h.AddTensor(2048, big, {mid});
  (void)t;
  h.AddTensor(512, mid, {join});  // mid accumulates 2048 + 512 bytes
  Graph graph = h.Build({small, big, mid, join});
  EXPECT_EQ(Order("xla-dfs", graph), (std::vector<OpId>{big, mid, small, join}));
}

TEST(XlaDfs, BreaksFullTiesByProgramPosition) {
  HandGraph h;
  OpId x = h.AddOp(), y = h.AddOp(), join = h.AddOp();
  h.AddTensor(1024, x, {join});
  h.AddTensor(1024, y, {join});
  EXPECT_EQ(Order("xla-dfs", h.Build({y, x, join})), (std::vector<OpId>{y, x, join}));
}

// A size-0 tensor carries no bytes but is a dependency; the DFS must still honour it.
TEST(XlaDfs, HonoursOrderingEdgesAndAliasEdges) {
  HandGraph h;
  OpId first = h.AddOp(), view = h.AddOp(), late = h.AddOp(), sink = h.AddOp();
  TensorId base = h.AddTensor(1024, first, {view});
  h.AddTensor(1024, view, {sink}, base);
  h.AddTensor(0, view, {late});
  h.AddTensor(8192, late, {sink});
  Graph graph = h.Build({first, view, late, sink});
  std::vector<OpId> order = Order("xla-dfs", graph);
  EXPECT_EQ(CheckTopological(graph, BuildDependencies(graph), order), "");
}

}  // namespace
}  // namespace roam
