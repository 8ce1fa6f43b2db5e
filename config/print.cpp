// `roam config`: the resolved tree as YAML (values with their docs) and a config's model and
// training sections as JSON for tools/torch_export.
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/config.h"

namespace roam::config {
namespace {

template <typename Table, typename Enum>
std::string NameOf(const Table& table, Enum value) {
  for (const auto& entry : table)
    if (entry.value == value) return std::string(entry.name);
  return "";
}

// The model and training keys that apply to the config's family and optimizer, with values.
nlohmann::ordered_json ModelJson(const Config& c) {
  const gen::ModelConfig& m = c.model;
  const std::map<std::string, nlohmann::ordered_json> values = {
      {"family", NameOf(gen::kFamilyNames, m.family)},
      {"name", m.name},
      {"batch", m.batch},
      {"dtype", std::string(gen::ToString(m.dtype))},
      {"device", m.device == gen::Device::kCpu ? "cpu" : "cuda"},
      {"n_layer", m.n_layer},
      {"n_embd", m.n_embd},
      {"n_head", m.n_head},
      {"n_inner", m.n_inner},
      {"dropout", m.dropout},
      {"n_kv_head", m.n_kv_head},
      {"attention", NameOf(gen::kAttentionNames, m.attention)},
      {"seq_len", m.seq_len},
      {"vocab", m.vocab},
      {"n_positions", m.n_positions},
      {"tie_embeddings", m.tie_embeddings},
      {"type_vocab", m.type_vocab},
      {"image_size", m.image_size},
      {"num_classes", m.num_classes},
      {"patch_size", m.patch_size},
      {"depth", m.depth},
      {"batch_norm", m.batch_norm},
      {"width_mult", m.width_mult}};
  nlohmann::ordered_json model = nlohmann::ordered_json::object();
  for (const std::string& key : gen::FamilyKeys(m.family)) model[key] = values.at(key);
  return model;
}

nlohmann::ordered_json TrainingJson(const gen::TrainingConfig& t) {
  nlohmann::ordered_json training = {{"optimizer", NameOf(gen::kOptimizerNames, t.optimizer)},
                                     {"lr", t.lr},
                                     {"weight_decay", t.weight_decay},
                                     {"precision", NameOf(gen::kPrecisionNames, t.precision)}};
  if (t.optimizer == gen::OptimizerKind::kSgd) {
    training["momentum"] = t.momentum;
    training["nesterov"] = t.nesterov;
  } else {
    training["beta1"] = t.beta1;
    training["beta2"] = t.beta2;
    training["eps"] = t.eps;
  }
  return training;
}

std::string Scalar(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return FormatNumber(value.get<double>());
  return value.dump();
}

void PrintSection(std::ostream& out, const std::string& name,
                  const nlohmann::ordered_json& section) {
  out << name << ":\n";
  for (const auto& [key, value] : section.items())
    out << "  " << key << ": " << Scalar(value) << "\n";
}

// Fields nest by their dotted keys; consecutive fields share their sections' headers.
void PrintFields(std::ostream& out, const std::vector<Field>& fields, const Planning& p) {
  std::vector<std::string> open;  // the sections the last field was printed under
  for (const Field& f : fields) {
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      const size_t dot = f.key.find('.', start);
      parts.push_back(f.key.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    size_t same = 0;
    while (same < open.size() && same + 1 < parts.size() && open[same] == parts[same]) ++same;
    open.resize(same);
    for (size_t i = same; i + 1 < parts.size(); ++i) {
      out << std::string(2 * i, ' ') << parts[i] << ":\n";
      open.push_back(parts[i]);
    }
    out << std::string(2 * (parts.size() - 1), ' ') << parts.back() << ": " << f.print(p) << "  # "
        << f.doc << "\n";
  }
}

}  // namespace

std::string PrintYaml(const Config* config) {
  std::ostringstream out;
  Planning p;
  if (config != nullptr) {
    out << "# " << config->source << ", resolved (docs/configs.md)\n";
    PrintSection(out, "model", ModelJson(*config));
    PrintSection(out, "training", TrainingJson(config->training));
    p.planner = config->planner;
    p.remat = config->remat;
  } else {
    out << "# The planner's and remat's defaults (docs/configs.md)\n";
    p.remat.alignment = p.planner.alignment;
  }
  PrintFields(out, PlannerFields(), p);
  PrintFields(out, RematFields(), p);
  return out.str();
}

std::string PrintModelJson(const Config& config) {
  nlohmann::ordered_json out = {{"source", config.source},
                                {"model", ModelJson(config)},
                                {"training", TrainingJson(config.training)}};
  return out.dump(2) + "\n";
}

}  // namespace roam::config
