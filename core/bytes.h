// The arithmetic of byte counts: every size, total, offset and height roam computes stays at or
// below kMaxBytes, and every operation on values that come from input is checked against it.
//
// Why 2^50 bytes (1 PiB): it is over 7000 times the memory of the largest accelerator (an H200
// holds 141 GB), so no real training step comes near it; it is exact in a double (GLPK's
// models and the summary's ratios are computed in doubles, exact up to 2^53); and two values at
// or below it can be added, or one multiplied by an alignment of at most kMaxAlignment, without
// leaving std::int64_t. Input that would exceed it is bad input (InputError, exit 2), named
// where it is read, never a wrap-around (docs/memory-model.md, "Limits").
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "core/types.h"

namespace roam {

inline constexpr Bytes kMaxBytes = Bytes{1} << 50;
// The largest alignment roam accepts (1 GiB): far above any allocator's rounding, and small
// enough that rounding a size of at most kMaxBytes up to it stays far below 2^63.
inline constexpr Bytes kMaxAlignment = Bytes{1} << 30;

// "1125899906842624 bytes (2^50, 1 PiB)", for messages.
inline std::string DescribeMaxBytes() { return std::to_string(kMaxBytes) + " bytes (2^50, 1 PiB)"; }

// Whether a value is a byte count roam can hold: 0 <= bytes <= kMaxBytes.
constexpr bool InByteRange(Bytes bytes) { return bytes >= 0 && bytes <= kMaxBytes; }

// a + b, or nullopt when an operand is out of range or the sum exceeds kMaxBytes.
constexpr std::optional<Bytes> AddBytes(Bytes a, Bytes b) {
  if (!InByteRange(a) || !InByteRange(b) || a > kMaxBytes - b) return std::nullopt;
  return a + b;
}

// count * size for non-negative operands (element counts, shapes, element sizes), or nullopt
// when an operand is negative or the product exceeds kMaxBytes.
constexpr std::optional<Bytes> MulBytes(std::int64_t count, std::int64_t size) {
  if (count < 0 || size < 0) return std::nullopt;
  if (count == 0 || size == 0) return Bytes{0};
  if (count > kMaxBytes / size) return std::nullopt;
  return count * size;
}

// size rounded up to a multiple of alignment, or nullopt when size is out of range, the
// alignment is not in [1, kMaxAlignment], or the result exceeds kMaxBytes.
constexpr std::optional<Bytes> AlignUpBytes(Bytes size, Bytes alignment) {
  if (!InByteRange(size) || alignment < 1 || alignment > kMaxAlignment) return std::nullopt;
  const Bytes aligned = AlignUp(size, alignment);  // < 2^51: cannot overflow
  if (aligned > kMaxBytes) return std::nullopt;
  return aligned;
}

// A byte count given as a double (a float in an input file, a ratio times a peak), rounded to
// the nearest byte, or nullopt when it is NaN, infinite, negative or above kMaxBytes. Every
// conversion of a floating-point value to bytes goes through here.
inline std::optional<Bytes> BytesFromDouble(double value) {
  if (!std::isfinite(value) || value < 0.0 || value > static_cast<double>(kMaxBytes))
    return std::nullopt;
  const auto bytes = static_cast<Bytes>(std::llround(value));
  if (!InByteRange(bytes)) return std::nullopt;
  return bytes;
}

// A running total of byte counts that remembers whether it ever exceeded kMaxBytes.
class ByteSum {
 public:
  // Returns false (and leaves the total saturated) once the sum exceeds kMaxBytes.
  bool Add(Bytes bytes) {
    auto sum = AddBytes(total_, bytes);
    if (!sum) {
      total_ = kMaxBytes;
      overflowed_ = true;
      return false;
    }
    total_ = *sum;
    return !overflowed_;
  }
  Bytes total() const { return total_; }
  bool overflowed() const { return overflowed_; }

 private:
  Bytes total_ = 0;
  bool overflowed_ = false;
};

}  // namespace roam
