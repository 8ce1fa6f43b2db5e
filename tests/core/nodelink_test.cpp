// Import of Checkmate's and MOCCASIN's node-link graphs, and MOCCASIN's peak accounting.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/io.h"
#include "core/memory_model.h"
#include "core/types.h"

namespace roam {
namespace {

TEST(NodeLink, ReadsCheckmateGraphs) {
  const char* text = R"({"directed": true, "multigraph": false, "graph": {"name": "fcn"},
    "nodes": [{"id": 0, "cost_ram": 400, "cost_cpu": 2.5, "name": "conv"},
              {"id": 1, "cost_ram": 200, "cost_cpu": 1},
              {"id": 2, "cost_ram": 100, "cost_cpu": 3}],
    "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}, {"source": 0, "target": 2}]})";
  Graph g = ParseNodeLink(text, "fcn.json");
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.name, "fcn");
  EXPECT_EQ(g.ops[0].name, "conv");
  EXPECT_EQ(g.tensors[0].size, 400);
  EXPECT_EQ(g.tensors[0].consumers, (std::vector<OpId>{1, 2}));
  EXPECT_EQ(*g.cost(0), 2.5);
  EXPECT_EQ(*g.cost(2), 3.0);
  EXPECT_EQ(g.program_order, (std::vector<OpId>{0, 1, 2}));
}

TEST(NodeLink, ReadsMoccasinGraphsWithKeyedLinksParamsAndOrder) {
  const char* text = R"({"graph": {"order": ["b", "a", "c"]},
    "nodes": [{"id": "a", "out_cost": 10, "duration": 4, "param_cost": 7},
              {"id": "b", "out_cost": 20, "duration": 1},
              {"id": "c", "out_cost": 5, "duration": 2}],
    "links": [{"0": "b", "1": "c"}, {"0": "a", "1": "c"}]})";
  Graph g = ParseNodeLink(text, "rand.json");
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.program_order, (std::vector<OpId>{1, 0, 2}));
  EXPECT_EQ(*g.cost(0), 4.0);
  // param_cost is a persistent input of its node, outside the arena.
  ASSERT_EQ(g.num_tensors(), 4);
  EXPECT_EQ(g.tensors[3].producer, kNoOp);
  EXPECT_EQ(g.tensors[3].size, 7);
  MemoryModel m = BuildMemoryModel(g, 1);
  EXPECT_EQ(m.persistent_bytes, 7);
}

// MOCCASIN's published random layered graphs: the node's id under "name" (no "id"), links
// naming their ends "0" and "1"; read like networkx's own spelling of the same graph.
TEST(NodeLink, ReadsBothSpellingsOfTheSameGraph) {
  const char* networkx = R"({"nodes": [{"id": 0, "out_cost": 10, "duration": 4},
              {"id": 1, "out_cost": 20, "duration": 1}, {"id": 2, "out_cost": 5, "duration": 2}],
    "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}, {"source": 0, "target": 2}]})";
  const char* moccasin = R"({"nodes": [{"name": 0, "out_cost": 10, "duration": 4},
              {"name": 1, "out_cost": 20, "duration": 1}, {"name": 2, "out_cost": 5, "duration": 2}],
    "links": [{"0": 0, "1": 1}, {"0": 1, "1": 2}, {"0": 0, "1": 2}]})";
  const Graph a = ParseNodeLink(networkx, "networkx.json");
  const Graph b = ParseNodeLink(moccasin, "moccasin.json");
  ASSERT_EQ(a.num_ops(), 3);
  ASSERT_EQ(b.num_ops(), 3);
  for (OpId op = 0; op < 3; ++op) {
    EXPECT_EQ(a.ops[U(op)].name, b.ops[U(op)].name);
    EXPECT_EQ(*a.cost(op), *b.cost(op));
  }
  for (TensorId t = 0; t < 3; ++t) {
    EXPECT_EQ(a.tensors[U(t)].size, b.tensors[U(t)].size);
    EXPECT_EQ(a.tensors[U(t)].consumers, b.tensors[U(t)].consumers);
  }
  EXPECT_EQ(b.tensors[0].consumers, (std::vector<OpId>{1, 2}));
  // String ids under "name" work too, and a node with neither is refused naming both.
  const Graph c = ParseNodeLink(
      R"({"nodes": [{"name": "x", "out_cost": 1}, {"name": "y", "out_cost": 2}],
          "links": [{"0": "x", "1": "y"}]})",
      "named.json");
  EXPECT_EQ(c.ops[0].name, "x");
  EXPECT_EQ(c.tensors[0].consumers, (std::vector<OpId>{1}));
  try {
    ParseNodeLink(R"({"nodes": [{"out_cost": 1}], "links": []})", "none.json");
    ADD_FAILURE() << "a node without an id was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"id\" (or \"name\")"), std::string::npos) << e.what();
  }
}

// MOCCASIN's appendix A.3: while node v is computed, memory holds its output and every output
// computed earlier that a node not yet computed (or v itself) still needs.
Bytes MoccasinPeak(const Graph& g, const std::vector<OpId>& order) {
  std::vector<int> pos(U(g.num_ops()));
  for (size_t i = 0; i < order.size(); ++i) pos[U(order[i])] = static_cast<int>(i);
  Bytes peak = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    Bytes mem = g.tensors[U(order[i])].size;
    for (size_t j = 0; j < i; ++j) {
      bool needed = false;
      for (OpId c : g.tensors[U(order[j])].consumers)
        needed = needed || pos[U(c)] >= static_cast<int>(i);
      if (needed) mem += g.tensors[U(order[j])].size;
    }
    peak = std::max(peak, mem);
  }
  return peak;
}

TEST(NodeLink, MoccasinPeakIsRoamsTheoreticalPeak) {
  const char* texts[] = {
      R"({"nodes": [{"id": 0, "out_cost": 3}, {"id": 1, "out_cost": 5}, {"id": 2, "out_cost": 2},
                    {"id": 3, "out_cost": 7}, {"id": 4, "out_cost": 1}],
          "links": [{"source": 0, "target": 1}, {"source": 0, "target": 3}, {"source": 1, "target": 2},
                    {"source": 2, "target": 3}, {"source": 3, "target": 4}, {"source": 1, "target": 4}]})",
      R"({"nodes": [{"id": 0, "cost_ram": 8}, {"id": 1, "cost_ram": 1}, {"id": 2, "cost_ram": 4},
                    {"id": 3, "cost_ram": 2}],
          "links": [{"source": 0, "target": 2}, {"source": 1, "target": 2}, {"source": 1, "target": 3},
                    {"source": 2, "target": 3}]})"};
  for (const char* text : texts) {
    Graph g = ParseNodeLink(text, "hand.json");
    MemoryModel m = BuildMemoryModel(g, 1);
    EXPECT_EQ(TheoreticalPeak(g, m, g.program_order), MoccasinPeak(g, g.program_order));
  }
}

TEST(NodeLink, MalformedFilesNameTheElementAndField) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"[1, 2]", "must be a JSON object"},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}]}", "\"links\" is missing"},
      {"{\"nodes\": [{\"cost_ram\": 1}], \"links\": []}", "nodes[0]: field \"id\""},
      {"{\"nodes\": [{\"id\": 0}], \"links\": []}", "nodes[0]: needs \"cost_ram\""},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": -5}], \"links\": []}", "\"cost_ram\" must be"},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}, {\"id\": 0, \"cost_ram\": 1}], \"links\": []}",
       "duplicates node"},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}], \"links\": [{\"source\": 0, \"target\": 9}]}",
       "links[0]: field \"target\" refers to node 9"},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}], \"links\": [{\"source\": 0}]}",
       "links[0]: field \"target\""},
      {"{\"nodes\": [{\"id\": 0, \"cost_ram\": 1}, {\"id\": 1, \"cost_ram\": 1}], \"links\": "
       "[{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 0}]}",
       "cycle"},
      {"{\"graph\": {\"order\": [0]}, \"nodes\": [{\"id\": 0, \"cost_ram\": 1}, {\"id\": 1, "
       "\"cost_ram\": 1}], \"links\": []}",
       "graph.order"},
      {"{\"nodes\": [", "malformed JSON"},
  };
  for (const Case& c : cases) {
    try {
      ParseNodeLink(c.text, "bad.json");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("bad.json", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace roam
