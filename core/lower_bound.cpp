#include "core/lower_bound.h"

#include <bit>
#include <cstdint>

namespace roam {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

// Rows of n bits, one row per op.
class BitMatrix {
 public:
  explicit BitMatrix(int n) : words_((U(n) + 63) / 64), bits_(U(n) * words_, 0) {}
  std::uint64_t* Row(int r) { return bits_.data() + U(r) * words_; }
  const std::uint64_t* Row(int r) const { return bits_.data() + U(r) * words_; }
  size_t words() const { return words_; }
  void Set(int r, int c) { Row(r)[U(c) / 64] |= std::uint64_t{1} << (U(c) % 64); }
  void OrInto(int dst, int src) {
    std::uint64_t* d = Row(dst);
    const std::uint64_t* s = Row(src);
    for (size_t w = 0; w < words_; ++w) d[w] |= s[w];
  }

 private:
  size_t words_;
  std::vector<std::uint64_t> bits_;
};

}  // namespace

ForcedResidency CertifiedLowerBound(const Graph& graph, const MemoryModel& model,
                                    const Dependencies& deps) {
  const int n = graph.num_ops();
  ForcedResidency result;
  result.per_op.assign(U(n), 0);
  if (n == 0) return result;

  // ancestors[v] and descendants[v] include v itself.
  BitMatrix ancestors(n), descendants(n);
  const std::vector<OpId>& topo = graph.program_order;
  for (OpId v : topo) {
    ancestors.Set(v, v);
    for (OpId p : deps.Preds(v)) ancestors.OrInto(v, p);
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    descendants.Set(*it, *it);
    for (OpId s : deps.Succs(*it)) descendants.OrInto(*it, s);
  }

  // Which ops touch each planned storage (the memory model stores it the other way round).
  std::vector<std::vector<OpId>> touchers(model.storages.size());
  for (OpId op = 0; op < n; ++op)
    for (StorageId sid : model.Touches(op)) touchers[U(sid)].push_back(op);

  const size_t words = ancestors.words();
  std::vector<std::uint64_t> forced(words);
  for (StorageId sid : model.planned) {
    const Storage& s = model.storages[U(sid)];
    const OpId producer = graph.tensors[U(s.root)].producer;
    const std::uint64_t* after_producer = descendants.Row(producer);
    if (s.output) {
      forced.assign(after_producer, after_producer + words);
    } else {
      // Ops that precede some toucher: the storage cannot be freed before them.
      forced.assign(words, 0);
      for (OpId u : touchers[U(sid)]) {
        const std::uint64_t* before_u = ancestors.Row(u);
        for (size_t w = 0; w < words; ++w) forced[w] |= before_u[w];
      }
      for (size_t w = 0; w < words; ++w) forced[w] &= after_producer[w];
    }
    for (size_t w = 0; w < words; ++w) {
      for (std::uint64_t bits = forced[w]; bits != 0; bits &= bits - 1) {
        const size_t v = w * 64 + static_cast<size_t>(std::countr_zero(bits));
        result.per_op[v] += s.size;
      }
    }
  }
  for (OpId v = 0; v < n; ++v) {
    if (result.at == kNoOp || result.per_op[U(v)] > result.bound) {
      result.bound = result.per_op[U(v)];
      result.at = v;
    }
  }
  return result;
}

}  // namespace roam
