#include "baseline/layouts.h"

#include <array>
#include <string>

#include "core/error.h"

namespace roam {

namespace {
constexpr std::array<std::string_view, 3> kNames = {"pytorch", "llfb", "best-fit"};
}  // namespace

std::span<const std::string_view> LayoutNames() { return kNames; }

std::vector<Bytes> PlaceBuffers(std::string_view name, std::span<const Interval> intervals,
                                Bytes alignment) {
  (void)intervals;
  (void)alignment;
  throw InputError("unknown layout \"" + std::string(name) + "\"");
}

}  // namespace roam
