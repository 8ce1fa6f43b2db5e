// Import of networkx node-link JSON (Checkmate's and MOCCASIN's published graphs).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"
#include "core/types.h"

namespace roam {
namespace {

using nlohmann::json;

std::string FormatDouble(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string Show(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Node ids may be integers or strings; either is a key.
std::string Key(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

double Number(const json& node, std::string_view field, const std::string& where, bool* found) {
  auto it = node.find(field);
  *found = it != node.end() && !it->is_null();
  if (!*found) return 0;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
    throw InputError(where + ": field \"" + std::string(field) +
                     "\" must be a finite number >= 0, got " + Show(*it));
  return it->get<double>();
}

// A size field as bytes: at most roam's maximum (core/bytes.h), never a wrapped conversion.
Bytes Size(double value, std::string_view field, const std::string& where) {
  const std::optional<Bytes> bytes = BytesFromDouble(value);
  if (!bytes)
    throw InputError(where + ": field \"" + std::string(field) + "\" is " + FormatDouble(value) +
                     ", more than roam's maximum of " + DescribeMaxBytes());
  return *bytes;
}

// A cost field: at most kMaxOpCost, so sums of costs stay finite.
double Cost(double value, std::string_view field, const std::string& where) {
  if (value > kMaxOpCost)
    throw InputError(where + ": field \"" + std::string(field) + "\" is " + FormatDouble(value) +
                     ", must be at most 1e21");
  return value;
}

}  // namespace

Graph ParseNodeLink(std::string_view text, std::string_view source) {
  const std::string src(source);
  json doc;
  CheckJsonNesting(text, source);
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw InputError(src + ": malformed JSON: " + e.what());
  }
  if (!doc.is_object()) throw InputError(src + ": must be a JSON object (networkx node-link)");
  auto nodes_it = doc.find("nodes");
  if (nodes_it == doc.end() || !nodes_it->is_array())
    throw InputError(src + ": field \"nodes\" is missing or not an array");
  auto links_it = doc.find("links");
  if (links_it == doc.end()) links_it = doc.find("edges");  // networkx >= 3.4 spells it so
  if (links_it == doc.end() || !links_it->is_array())
    throw InputError(src + ": field \"links\" is missing or not an array");

  Graph graph;
  if (auto g = doc.find("graph"); g != doc.end() && g->is_object())
    if (auto name = g->find("name"); name != g->end() && name->is_string())
      graph.name = name->get<std::string>();
  const json& nodes = *nodes_it;
  std::unordered_map<std::string, OpId> index;
  const auto n = static_cast<int>(nodes.size());
  graph.ops.resize(U(n));
  graph.tensors.resize(U(n));
  ByteSum total;  // every tensor is its own storage
  for (int i = 0; i < n; ++i) {
    const json& node = nodes[U(i)];
    std::string where = src + ": nodes[" + std::to_string(i) + "]";
    if (!node.is_object()) throw InputError(where + ": must be a JSON object");
    // networkx writes the id under "id"; MOCCASIN's published graphs under "name".
    auto id = node.find("id");
    if (id == node.end()) id = node.find("name");
    if (id == node.end() || !(id->is_number_integer() || id->is_string()))
      throw InputError(where +
                       ": field \"id\" (or \"name\") is missing or not an integer or string");
    if (!index.emplace(Key(*id), i).second)
      throw InputError(where + ": field \"id\" duplicates node " + Show(*id));
    Op& op = graph.ops[U(i)];
    op.ext_id = i;
    op.name = id->is_string() ? id->get<std::string>() : "node" + id->dump();
    if (auto name = node.find("name"); name != node.end() && name->is_string())
      op.name = name->get<std::string>();
    bool found = false, found_alt = false;
    double ram = Number(node, "cost_ram", where, &found);
    double out = Number(node, "out_cost", where, &found_alt);
    if (!found && !found_alt)
      throw InputError(where + ": needs \"cost_ram\" (Checkmate) or \"out_cost\" (MOCCASIN)");
    Tensor& t = graph.tensors[U(i)];
    t.ext_id = i;
    t.size = Size(found ? ram : out, found ? "cost_ram" : "out_cost", where);
    if (!total.Add(t.size))
      throw InputError(where + ": field \"" + std::string(found ? "cost_ram" : "out_cost") +
                       "\": the sizes up to here total more than roam's maximum of " +
                       DescribeMaxBytes());
    t.producer = i;
    t.kind = TensorKind::kActivation;
    double cpu = Number(node, "cost_cpu", where, &found);
    double duration = Number(node, "duration", where, &found_alt);
    if (found || found_alt) {
      graph.op_costs.resize(U(n));
      graph.op_costs[U(i)] = Cost(found ? cpu : duration, found ? "cost_cpu" : "duration", where);
    }
    double params = Number(node, "param_cost", where, &found);
    if (found && params > 0) {
      Tensor p;
      p.ext_id = n + i;
      p.size = Size(params, "param_cost", where);
      if (!total.Add(p.size))
        throw InputError(where +
                         ": field \"param_cost\": the sizes up to here total more than "
                         "roam's maximum of " +
                         DescribeMaxBytes());
      p.consumers = {i};
      p.kind = TensorKind::kWeight;
      graph.tensors.push_back(p);
    }
  }
  const json& links = *links_it;
  auto endpoint = [&](const json& link, const std::string& where, const char* field,
                      const char* alt) {
    auto it = link.find(field);
    if (it == link.end()) it = link.find(alt);
    if (it == link.end())
      throw InputError(where + ": field \"" + field + "\" (or \"" + alt + "\") is missing");
    auto found = index.find(Key(*it));
    if (found == index.end())
      throw InputError(where + ": field \"" + field + "\" refers to node " + Show(*it) +
                       ", which does not exist");
    return found->second;
  };
  for (size_t i = 0; i < links.size(); ++i) {
    std::string where = src + ": links[" + std::to_string(i) + "]";
    if (!links[i].is_object()) throw InputError(where + ": must be a JSON object");
    OpId from = endpoint(links[i], where, "source", "0");
    OpId to = endpoint(links[i], where, "target", "1");
    if (from == to) throw InputError(where + ": links node " + std::to_string(from) + " to itself");
    graph.tensors[U(from)].consumers.push_back(to);
  }
  for (Tensor& t : graph.tensors) {
    std::sort(t.consumers.begin(), t.consumers.end());
    t.consumers.erase(std::unique(t.consumers.begin(), t.consumers.end()), t.consumers.end());
  }
  if (auto g = doc.find("graph"); g != doc.end() && g->is_object())
    if (auto order = g->find("order"); order != g->end() && !order->is_null()) {
      std::string where = src + ": graph.order";
      if (!order->is_array() || order->size() != nodes.size())
        throw InputError(where + ": must list every node once");
      std::vector<char> seen(U(n), 0);
      for (const json& v : *order) {
        auto it = index.find(Key(v));
        if (it == index.end()) throw InputError(where + ": node " + Show(v) + " does not exist");
        if (seen[U(it->second)]) throw InputError(where + ": node " + Show(v) + " appears twice");
        seen[U(it->second)] = 1;
        graph.program_order.push_back(it->second);
      }
    }
  Finalize(graph, src);
  return graph;
}

}  // namespace roam
