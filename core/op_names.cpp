#include "core/op_names.h"

namespace roam {

std::string_view OpBaseName(std::string_view name) {
  const size_t last = name.rfind('.');
  if (last == std::string_view::npos) return name;
  const size_t before = name.rfind('.', last - 1);
  if (last == 0 || before == std::string_view::npos) return name.substr(last + 1);
  // Three or more parts: the last is the overload.
  return name.substr(before + 1, last - before - 1);
}

bool IsInPlaceName(std::string_view name) {
  const std::string_view base = OpBaseName(name);
  return base.size() >= 2 && base.back() == '_' && base[base.size() - 2] != '_';
}

}  // namespace roam
