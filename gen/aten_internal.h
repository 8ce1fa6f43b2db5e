// What gen/aten.cpp and gen/aten_image.cpp share: the two halves of one class, Ops, split by
// topic (the image ops in aten_image.cpp). Not part of gen/'s public interface.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gen/builder.h"

namespace roam::gen {

// Emits a backward op with one output per needed gradient, returning them in input order.
std::vector<V> EmitMasked(Tape& t, std::string_view name, const std::vector<V>& inputs,
                          const std::vector<bool>& need, const std::vector<Tape::Out>& specs);

}  // namespace roam::gen
