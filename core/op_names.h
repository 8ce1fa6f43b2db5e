// What roam reads from an op's name. Names are informational in roam-graph-v1
// (docs/formats.md), but a few rules need them: in-place writes, random ops, batch norm's
// running statistics. Exporters write aten names as `namespace.op` ("aten.relu_") or with an
// overload, `namespace.op.overload` ("aten.add_.Tensor", "torch.ops.aten.add_.Tensor"); every
// rule reads the op part, so both spellings mean the same op.
#pragma once

#include <string_view>

namespace roam {

// The op part of a name: the last part of `namespace.op` or `op`, and the part before the
// overload where there are three or more parts ("aten.add_.Tensor" -> "add_").
std::string_view OpBaseName(std::string_view name);

// aten spells in-place variants with one trailing underscore ("relu_", "add_"); a leading
// underscore marks a private op ("_foreach_add_" is still in place, "__and__" is not).
bool IsInPlaceName(std::string_view name);

}  // namespace roam
