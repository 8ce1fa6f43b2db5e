// Core vocabulary of roam: the domain quantities every stage passes around.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace roam {

using Bytes = std::int64_t;       // a size or an address in the arena, in bytes
using Step = std::int32_t;        // a position in an execution order, 0..n-1
using OpId = std::int32_t;        // dense index of an op inside one Graph
using TensorId = std::int32_t;    // dense index of a tensor inside one Graph
using StorageId = std::int32_t;   // dense index of an alias group inside one MemoryModel
using ExternalId = std::int64_t;  // the id a file gave an op or tensor (unique, not dense)

inline constexpr OpId kNoOp = -1;          // producer of a graph input
inline constexpr TensorId kNoTensor = -1;  // alias_of of a tensor that owns its storage
inline constexpr StorageId kNoStorage = -1;
inline constexpr Step kNoStep = -1;
inline constexpr Bytes kDefaultAlignment = 512;  // CUDA caching allocator's rounding
// The most worker threads any setting may ask for (--threads, --jobs, --threads-per-job,
// planner.threads): above any machine's cores, and far below what oneTBB can create.
inline constexpr int kMaxThreads = 1024;

// An index as the standard containers take it: ids and steps are signed (-1 means none), so
// every subscript by one goes through here (the build warns on sign conversions).
constexpr std::size_t U(std::int64_t i) { return static_cast<std::size_t>(i); }

// Rounds up to a multiple of alignment; a size of 0 stays 0 (a pure ordering edge). Exact for
// sizes up to kMaxBytes and alignments up to kMaxAlignment (core/bytes.h), which is all the
// loaders let through; AlignUpBytes checks values that were not.
constexpr Bytes AlignUp(Bytes size, Bytes alignment) {
  // Alignments are powers of two nearly always, and the layout search rounds in its inner
  // loops, where a division is most of a step's cost: a mask gives the same result.
  if (size >= 0 && (alignment & (alignment - 1)) == 0)
    return (size + alignment - 1) & ~(alignment - 1);
  return (size + alignment - 1) / alignment * alignment;
}

}  // namespace roam
