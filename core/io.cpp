#include "core/io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/bytes.h"
#include "core/error.h"
#include "core/types.h"

namespace roam {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// Turns a byte offset into "line L, column C" for parse errors.
std::string LineColumn(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

json ParseJson(std::string_view text, std::string_view source) {
  CheckJsonNesting(text, source);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ...".
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw InputError(std::string(source) + ": malformed JSON at " +
                     LineColumn(text, e.byte == 0 ? 0 : e.byte - 1) + ": " + what);
  } catch (const json::out_of_range& e) {
    // A number literal beyond a double's range (found by fuzzing: 1E72088832).
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw InputError(std::string(source) + ": malformed JSON: " + what);
  }
}

// JSON integers above 2^63 - 1 parse as unsigned; reading them as int64 would wrap around.
bool IsInt64(const json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() ||
          v.get<std::uint64_t>() <=
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

// Reads fields of one JSON object, producing messages that locate the element.
class Element {
 public:
  Element(const json& value, std::string where) : value_(value), where_(std::move(where)) {
    if (!value_.is_object()) Fail("must be a JSON object");
  }
  [[noreturn]] void Fail(const std::string& problem) const {
    throw InputError(where_ + ": " + problem);
  }
  [[noreturn]] void FailField(std::string_view field, const std::string& problem) const {
    throw InputError(where_ + ": field \"" + std::string(field) + "\" " + problem);
  }
  const json* Find(std::string_view field) const {
    auto it = value_.find(field);
    return it == value_.end() ? nullptr : &*it;
  }
  const json& Require(std::string_view field) const {
    const json* v = Find(field);
    if (v == nullptr) FailField(field, "is missing");
    return *v;
  }
  std::int64_t Integer(std::string_view field) const {
    const json& v = Require(field);
    if (!IsInt64(v)) FailField(field, "must be a 64-bit integer, got " + Show(v));
    return v.get<std::int64_t>();
  }
  // An optional integer that may also be null; returns false when absent or null.
  bool OptionalInteger(std::string_view field, std::int64_t* out) const {
    const json* v = Find(field);
    if (v == nullptr || v->is_null()) return false;
    if (!IsInt64(*v)) FailField(field, "must be a 64-bit integer or null, got " + Show(*v));
    *out = v->get<std::int64_t>();
    return true;
  }
  std::string String(std::string_view field, bool required) const {
    const json* v = required ? &Require(field) : Find(field);
    if (v == nullptr || (!required && v->is_null())) return {};
    if (!v->is_string()) FailField(field, "must be a string, got " + Show(*v));
    return v->get<std::string>();
  }
  bool Bool(std::string_view field) const {
    const json* v = Find(field);
    if (v == nullptr || v->is_null()) return false;
    if (!v->is_boolean()) FailField(field, "must be true or false, got " + Show(*v));
    return v->get<bool>();
  }
  const json& Array(std::string_view field, bool required) const {
    static const json kEmpty = json::array();
    const json* v = required ? &Require(field) : Find(field);
    if (v == nullptr || (!required && v->is_null())) return kEmpty;
    if (!v->is_array()) FailField(field, "must be an array, got " + Show(*v));
    return *v;
  }
  const std::string& where() const { return where_; }

  static std::string Show(const json& v) {
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
  }

 private:
  const json& value_;
  std::string where_;
};

void CheckFormat(const Element& root, std::string_view expected) {
  std::string format = root.String("format", /*required=*/true);
  if (format != expected)
    root.FailField("format", "is \"" + format + "\", expected \"" + std::string(expected) + "\"");
}

template <typename T>
std::string JoinIds(const std::vector<T>& ids) {
  std::ostringstream out;
  for (size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : "") << ids[i];
  return out.str();
}

}  // namespace

std::string ReadFile(const std::string& path) {
  // Only regular files: a device (/dev/zero), a fifo or a directory would never end, block or
  // fail obscurely. The size is checked before anything is allocated.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": cannot open for reading: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory, expected a file");
  if (!S_ISREG(st.st_mode))
    throw InputError(path + ": is not a regular file (a device, fifo or socket); expected a file");
  if (st.st_size > kMaxInputFileBytes)
    throw InputError(path + ": is " + std::to_string(st.st_size) +
                     " bytes, more than roam's input limit of " + DescribeMaxInputFileBytes());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open for reading: " + std::strerror(errno));
  std::string text(static_cast<size_t>(st.st_size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  // A file that grew while being read: read on, within the limit.
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > static_cast<size_t>(kMaxInputFileBytes))
      throw InputError(path + ": is more than roam's input limit of " +
                       DescribeMaxInputFileBytes());
  }
  return text;
}

mode_t FileCreationMode() {
  // The umask, read without changing it (umask(2) sets it, a race with any thread creating a
  // file meanwhile): Linux reports it in /proc/self/status.
  static const mode_t mode = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("Umask:", 0) == 0)
        return static_cast<mode_t>(0666 & ~std::stoul(line.substr(6), nullptr, 8));
    const mode_t mask = ::umask(022);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

namespace {

// Temporaries are named ".NAME.tmp.HOST.PID.XXXXXX": a writer killed before its rename leaves
// one behind, which the next write of NAME from this host removes once PID is no longer alive
// (a live writer's, or another host's on a shared filesystem, is left alone).
std::string TemporaryPrefix(const std::string& filename) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string prefix = ".";
  prefix += filename;
  prefix += ".tmp.";
  for (const char* c = host; *c != '\0'; ++c) prefix += (*c == '.' || *c == '/') ? '_' : *c;
  prefix += ".";
  return prefix;
}

void RemoveStaleTemporaries(const std::filesystem::path& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "PID.XXXXXX"
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    long pid = 0;
    auto [end_pid, err] = std::from_chars(rest.data(), rest.data() + dot, pid);
    if (err != std::errc() || end_pid != rest.data() + dot || pid <= 0) continue;
    if (pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("an output path is empty");
  fs::path target(path);
  // A link is written through, as `>` would: the file it names is replaced, the link stays.
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    const fs::path resolved = fs::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = TemporaryPrefix(target.filename().string());
  RemoveStaleTemporaries(dir, prefix);
  std::string tmpl = (dir / prefix).string();
  tmpl += std::to_string(::getpid());
  tmpl += ".XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw InputError(path + ": cannot create output file: " + std::strerror(errno));
  // mkstemp creates 0600; the output gets the mode any new file would (0666 less the umask).
  bool ok = ::fchmod(fd, FileCreationMode()) == 0;
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0 && ok) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) {
      data += n;
      left -= static_cast<size_t>(n);
    }
  }
  ok = ok && ::fsync(fd) == 0;
  int saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = std::rename(tmpl.c_str(), target.c_str()) == 0;
  if (!ok) {
    saved = errno ? errno : saved;
    std::remove(tmpl.c_str());
    throw InputError(path + ": cannot write output file: " + std::strerror(saved));
  }
}

void CheckJsonNesting(std::string_view text, std::string_view source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw InputError(std::string(source) + ": JSON nested more than " +
                         std::to_string(kMaxJsonDepth) + " levels deep at " + LineColumn(text, i) +
                         "; roam's formats nest a few levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

Graph ParseGraph(std::string_view text, std::string_view source) {
  const std::string src(source);
  json doc = ParseJson(text, source);
  Element root(doc, src);
  CheckFormat(root, kGraphFormat);
  Graph graph;
  graph.name = root.String("name", /*required=*/false);

  const json& ops = root.Array("ops", /*required=*/true);
  const json& tensors = root.Array("tensors", /*required=*/true);
  std::unordered_map<ExternalId, OpId> op_index;
  std::unordered_map<ExternalId, TensorId> tensor_index;
  op_index.reserve(ops.size());
  tensor_index.reserve(tensors.size());

  graph.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Element e(ops[i], src + ": ops[" + std::to_string(i) + "]");
    Op op;
    op.ext_id = e.Integer("id");
    Element named(ops[i], e.where() + " (id " + std::to_string(op.ext_id) + ")");
    op.name = named.String("name", /*required=*/false);
    std::string phase = named.String("phase", /*required=*/false);
    if (!ParsePhase(phase, &op.phase))
      named.FailField("phase",
                      "is \"" + phase + "\", expected forward, backward, optimizer or other");
    if (const json* cost = named.Find("cost"); cost != nullptr && !cost->is_null()) {
      if (!cost->is_number() || !std::isfinite(cost->get<double>()) || cost->get<double>() < 0 ||
          cost->get<double>() > kMaxOpCost)
        named.FailField("cost", "must be a number in [0, 1e21], got " + Element::Show(*cost));
      graph.op_costs.resize(ops.size());
      graph.op_costs[graph.ops.size()] = cost->get<double>();
    }
    if (!op_index.emplace(op.ext_id, static_cast<OpId>(graph.ops.size())).second)
      e.FailField("id", "duplicates op id " + std::to_string(op.ext_id));
    graph.ops.push_back(std::move(op));
  }
  // "recomputes" may name an op listed later, so it is resolved once every id is known.
  for (size_t i = 0; i < ops.size(); ++i) {
    Element e(ops[i], src + ": ops[" + std::to_string(i) + "] (id " +
                          std::to_string(graph.ops[i].ext_id) + ")");
    std::int64_t original = 0;
    if (!e.OptionalInteger("recomputes", &original)) continue;
    auto it = op_index.find(original);
    if (it == op_index.end())
      e.FailField("recomputes",
                  "refers to op " + std::to_string(original) + ", which does not exist");
    if (it->second == static_cast<OpId>(i)) e.FailField("recomputes", "refers to the op itself");
    graph.op_recomputes.resize(ops.size(), kNoOp);
    graph.op_recomputes[i] = it->second;
  }

  graph.tensors.reserve(tensors.size());
  std::vector<std::int64_t> alias_ext(tensors.size());
  std::vector<bool> has_alias(tensors.size(), false);
  auto op_ref = [&](const Element& e, std::string_view field, std::int64_t id) {
    auto it = op_index.find(id);
    if (it == op_index.end())
      e.FailField(field, "refers to op " + std::to_string(id) + ", which does not exist");
    return it->second;
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    Element first(tensors[i], src + ": tensors[" + std::to_string(i) + "]");
    Tensor t;
    t.ext_id = first.Integer("id");
    Element e(tensors[i], first.where() + " (id " + std::to_string(t.ext_id) + ")");
    t.size = e.Integer("size");
    if (t.size < 0) e.FailField("size", "is " + std::to_string(t.size) + ", must be >= 0");
    if (t.size > kMaxBytes)
      e.FailField("size", "is " + std::to_string(t.size) + ", more than roam's maximum of " +
                              DescribeMaxBytes());
    std::int64_t producer = 0;
    if (e.OptionalInteger("producer", &producer)) t.producer = op_ref(e, "producer", producer);
    if (e.Find("producer") == nullptr) e.FailField("producer", "is missing (use null for inputs)");
    const json& consumers = e.Array("consumers", /*required=*/false);
    for (const json& c : consumers) {
      if (!IsInt64(c)) e.FailField("consumers", "must hold op ids, got " + Element::Show(c));
      OpId op = op_ref(e, "consumers", c.get<std::int64_t>());
      if (op == t.producer)
        e.FailField("consumers", "lists op " + std::to_string(c.get<std::int64_t>()) +
                                     ", which also produces the tensor");
      t.consumers.push_back(op);
    }
    std::sort(t.consumers.begin(), t.consumers.end());
    t.consumers.erase(std::unique(t.consumers.begin(), t.consumers.end()), t.consumers.end());
    has_alias[i] = e.OptionalInteger("alias_of", &alias_ext[i]);
    t.output = e.Bool("output");
    std::string kind = e.String("kind", /*required=*/false);
    if (!ParseTensorKind(kind, &t.kind))
      e.FailField("kind", "is \"" + kind +
                              "\", expected weight, optimizer_state, input, activation, "
                              "gradient, temporary, control or \"\"");
    if (!tensor_index.emplace(t.ext_id, static_cast<TensorId>(graph.tensors.size())).second)
      first.FailField("id", "duplicates tensor id " + std::to_string(t.ext_id));
    graph.tensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!has_alias[i]) continue;
    auto it = tensor_index.find(alias_ext[i]);
    std::string where = src + ": tensors[" + std::to_string(i) + "] (id " +
                        std::to_string(graph.tensors[i].ext_id) + ")";
    if (it == tensor_index.end())
      throw InputError(where + ": field \"alias_of\" refers to tensor " +
                       std::to_string(alias_ext[i]) + ", which does not exist");
    if (it->second == static_cast<TensorId>(i))
      throw InputError(where + ": field \"alias_of\" refers to the tensor itself");
    graph.tensors[i].alias_of = it->second;
  }
  // Each storage's bytes are its root's size; their total bounds every peak and offset.
  {
    ByteSum total;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = graph.tensors[i];
      if (t.alias_of == kNoTensor && !total.Add(t.size))
        throw InputError(src + ": tensors[" + std::to_string(i) + "] (id " +
                         std::to_string(t.ext_id) +
                         "): field \"size\": the tensors up to here total more than roam's "
                         "maximum of " +
                         DescribeMaxBytes());
    }
  }
  // Alias chains must end at a root: walk each chain, marking as we go.
  {
    std::vector<char> state(graph.tensors.size(), 0);  // 0 new, 1 on current walk, 2 done
    for (TensorId t = 0; t < graph.num_tensors(); ++t) {
      std::vector<TensorId> walk;
      TensorId x = t;
      while (x != kNoTensor && state[U(x)] == 0) {
        state[U(x)] = 1;
        walk.push_back(x);
        x = graph.tensors[U(x)].alias_of;
      }
      if (x != kNoTensor && state[U(x)] == 1) {
        std::vector<ExternalId> cycle;
        for (auto it = std::find(walk.begin(), walk.end(), x); it != walk.end(); ++it)
          cycle.push_back(graph.tensors[U(*it)].ext_id);
        throw InputError(src + ": alias_of forms a cycle through tensors " + JoinIds(cycle));
      }
      for (TensorId w : walk) state[U(w)] = 2;
    }
  }

  const json& order = root.Array("program_order", /*required=*/false);
  if (!order.empty()) {
    std::vector<char> seen(graph.ops.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      const json& v = order[i];
      std::string where = src + ": program_order[" + std::to_string(i) + "]";
      if (!IsInt64(v)) throw InputError(where + ": must be an op id");
      auto it = op_index.find(v.get<std::int64_t>());
      if (it == op_index.end()) throw InputError(where + ": op " + v.dump() + " does not exist");
      if (seen[U(it->second)])
        throw InputError(where + ": op " + v.dump() + " appears twice; not a permutation");
      seen[U(it->second)] = 1;
      graph.program_order.push_back(it->second);
    }
    if (graph.program_order.size() != graph.ops.size()) {
      for (OpId op = 0; op < graph.num_ops(); ++op)
        if (!seen[U(op)])
          throw InputError(src + ": program_order: op " + std::to_string(graph.ops[U(op)].ext_id) +
                           " is missing; not a permutation of the ops");
    }
  }
  Finalize(graph, src);
  return graph;
}

Graph LoadGraph(const std::string& path) { return ParseGraph(ReadFile(path), path); }

std::string GraphToJson(const Graph& graph) {
  ordered_json doc;
  doc["format"] = kGraphFormat;
  doc["name"] = graph.name;
  ordered_json ops = ordered_json::array();
  for (const Op& op : graph.ops) {
    ordered_json o;
    o["id"] = op.ext_id;
    o["name"] = op.name;
    if (op.phase != Phase::kUnknown) o["phase"] = ToString(op.phase);
    const auto id = static_cast<OpId>(&op - graph.ops.data());
    if (auto cost = graph.cost(id)) o["cost"] = *cost;
    if (OpId original = graph.recomputes(id); original != kNoOp)
      o["recomputes"] = graph.ops[U(original)].ext_id;
    ops.push_back(std::move(o));
  }
  doc["ops"] = std::move(ops);
  ordered_json tensors = ordered_json::array();
  for (const Tensor& t : graph.tensors) {
    ordered_json o;
    o["id"] = t.ext_id;
    o["size"] = t.size;
    o["producer"] =
        t.producer == kNoOp ? ordered_json(nullptr) : ordered_json(graph.ops[U(t.producer)].ext_id);
    ordered_json consumers = ordered_json::array();
    for (OpId c : t.consumers) consumers.push_back(graph.ops[U(c)].ext_id);
    o["consumers"] = std::move(consumers);
    o["alias_of"] = t.alias_of == kNoTensor ? ordered_json(nullptr)
                                            : ordered_json(graph.tensors[U(t.alias_of)].ext_id);
    o["output"] = t.output;
    o["kind"] = ToString(t.kind);
    tensors.push_back(std::move(o));
  }
  doc["tensors"] = std::move(tensors);
  ordered_json order = ordered_json::array();
  for (OpId op : graph.program_order) order.push_back(graph.ops[U(op)].ext_id);
  doc["program_order"] = std::move(order);
  return doc.dump() + "\n";
}

namespace {
ordered_json SummaryObject(const PlanSummary& s) {
  ordered_json o;
  o["ops"] = s.ops;
  o["storages"] = s.storages;
  o["persistent_bytes"] = s.persistent_bytes;
  o["theoretical_peak"] = s.theoretical_peak;
  o["actual_peak"] = s.actual_peak;
  o["fragmentation"] = s.fragmentation;
  o["total_peak"] = s.total_peak;
  o["seconds"] = s.seconds;
  return o;
}
}  // namespace

std::string SummaryToJson(const PlanSummary& summary) { return SummaryObject(summary).dump(); }

std::string PlanToJson(const Graph& graph, const Plan& plan) {
  ordered_json doc;
  doc["format"] = kPlanFormat;
  doc["graph"] = plan.graph;
  doc["alignment"] = plan.alignment;
  ordered_json order = ordered_json::array();
  for (OpId op : plan.order) order.push_back(graph.ops[U(op)].ext_id);
  doc["order"] = std::move(order);
  // Only multi-stream plans carry steps: a single-stream plan reads and writes as before.
  if (!plan.steps.empty()) doc["steps"] = plan.steps;
  ordered_json buffers = ordered_json::array();
  for (const Buffer& b : plan.buffers) {
    ordered_json o;
    o["tensor"] = graph.tensors[U(b.tensor)].ext_id;
    o["offset"] = b.offset;
    o["size"] = b.size;
    o["start"] = b.start;
    o["end"] = b.end;
    buffers.push_back(std::move(o));
  }
  doc["buffers"] = std::move(buffers);
  doc["summary"] = SummaryObject(plan.summary);
  return doc.dump(1) + "\n";
}

Plan ParsePlan(std::string_view text, std::string_view source, const Graph& graph) {
  const std::string src(source);
  json doc = ParseJson(text, source);
  Element root(doc, src);
  CheckFormat(root, kPlanFormat);
  Plan plan;
  plan.graph = root.String("graph", /*required=*/false);
  plan.alignment = root.Integer("alignment");
  if (plan.alignment <= 0 || plan.alignment > kMaxAlignment)
    root.FailField("alignment", "is " + std::to_string(plan.alignment) + ", must be in [1, " +
                                    std::to_string(kMaxAlignment) + "]");

  std::unordered_map<ExternalId, OpId> op_index;
  for (OpId op = 0; op < graph.num_ops(); ++op) op_index.emplace(graph.ops[U(op)].ext_id, op);
  std::unordered_map<ExternalId, TensorId> tensor_index;
  for (TensorId t = 0; t < graph.num_tensors(); ++t)
    tensor_index.emplace(graph.tensors[U(t)].ext_id, t);

  const json& order = root.Array("order", /*required=*/true);
  for (size_t i = 0; i < order.size(); ++i) {
    std::string where = src + ": order[" + std::to_string(i) + "]";
    if (!IsInt64(order[i])) throw InputError(where + ": must be an op id");
    auto it = op_index.find(order[i].get<std::int64_t>());
    if (it == op_index.end())
      throw InputError(where + ": op " + order[i].dump() + " is not in the graph");
    plan.order.push_back(it->second);
  }
  const json& steps = root.Array("steps", /*required=*/false);
  if (const json* v = root.Find("steps");
      v != nullptr && !v->is_null() && steps.size() != order.size())
    root.FailField("steps", "has " + std::to_string(steps.size()) + " entries, order has " +
                                std::to_string(order.size()));
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string where = src + ": steps[" + std::to_string(i) + "]";
    if (!IsInt64(steps[i]) || steps[i].get<std::int64_t>() < 0 ||
        steps[i].get<std::int64_t>() > std::numeric_limits<Step>::max())
      throw InputError(where + ": must be a step, an integer in [0, " +
                       std::to_string(std::numeric_limits<Step>::max()) + "]");
    plan.steps.push_back(static_cast<Step>(steps[i].get<std::int64_t>()));
  }
  const json& buffers = root.Array("buffers", /*required=*/true);
  for (size_t i = 0; i < buffers.size(); ++i) {
    Element e(buffers[i], src + ": buffers[" + std::to_string(i) + "]");
    Buffer b;
    std::int64_t tensor = e.Integer("tensor");
    auto it = tensor_index.find(tensor);
    if (it == tensor_index.end())
      e.FailField("tensor", "refers to tensor " + std::to_string(tensor) + ", not in the graph");
    b.tensor = it->second;
    auto bytes = [&](std::string_view field) {
      std::int64_t v = e.Integer(field);
      if (!InByteRange(v))
        e.FailField(field,
                    "is " + std::to_string(v) + ", must be in [0, " + DescribeMaxBytes() + "]");
      return v;
    };
    b.offset = bytes("offset");
    b.size = bytes("size");
    auto step = [&](std::string_view field) {
      std::int64_t v = e.Integer(field);
      if (v < 0 || v > std::numeric_limits<Step>::max()) e.FailField(field, "is out of range");
      return static_cast<Step>(v);
    };
    b.start = step("start");
    b.end = step("end");
    plan.buffers.push_back(b);
  }
  Element summary(root.Require("summary"), src + ": summary");
  PlanSummary& s = plan.summary;
  s.ops = static_cast<int>(summary.Integer("ops"));
  s.storages = static_cast<int>(summary.Integer("storages"));
  s.persistent_bytes = summary.Integer("persistent_bytes");
  s.theoretical_peak = summary.Integer("theoretical_peak");
  s.actual_peak = summary.Integer("actual_peak");
  s.total_peak = summary.Integer("total_peak");
  const json& frag = summary.Require("fragmentation");
  if (!frag.is_number()) summary.FailField("fragmentation", "must be a number");
  s.fragmentation = frag.get<double>();
  if (const json* sec = summary.Find("seconds"); sec != nullptr && sec->is_number())
    s.seconds = sec->get<double>();
  return plan;
}

std::string PlanGraphName(std::string_view text, std::string_view source) {
  try {
    const json doc = ParseJson(text, source);
    if (!doc.is_object()) return {};
    auto it = doc.find("graph");
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  } catch (const InputError&) {
    return {};
  }
}

Plan LoadPlan(const std::string& path, const Graph& graph) {
  return ParsePlan(ReadFile(path), path, graph);
}

}  // namespace roam
