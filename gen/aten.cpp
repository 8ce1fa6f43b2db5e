#include "gen/aten.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/types.h"
#include "gen/aten_internal.h"

namespace roam::gen {
namespace {

std::int64_t WrapDim(std::int64_t dim, std::int64_t rank) { return dim < 0 ? dim + rank : dim; }

// ATen's computeStride: the strides that let `shape` view a tensor of old geometry, if any.
std::optional<Shape> ComputeStride(const Shape& old_shape, const Shape& old_strides,
                                   const Shape& shape) {
  if (old_shape.empty()) return Shape(shape.size(), 1);
  if (NumElements(old_shape) == 0) return ContiguousStrides(shape);
  Shape strides(shape.size(), 1);
  std::int64_t view_d = static_cast<std::int64_t>(shape.size()) - 1;
  std::int64_t chunk_base_stride = old_strides.back();
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(old_shape.size()) - 1; tensor_d >= 0;
       --tensor_d) {
    tensor_numel *= old_shape[U(tensor_d)];
    if (tensor_d == 0 || (old_shape[U(tensor_d - 1)] != 1 &&
                          old_strides[U(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[U(view_d)] == 1)) {
        strides[U(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[U(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[U(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Shape Broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    std::int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    std::int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) Bug("shapes do not broadcast");
    out[i] = std::max(da, db);
  }
  return out;
}

bool ColumnMajor(const Shape& sizes, const Shape& strides) {
  return strides[0] == 1 && strides[1] == sizes[0];
}

}  // namespace

std::vector<V> EmitMasked(Tape& t, std::string_view name, const std::vector<V>& inputs,
                          const std::vector<bool>& need, const std::vector<Tape::Out>& specs) {
  std::vector<Tape::Out> wanted;
  for (size_t i = 0; i < specs.size(); ++i)
    if (need[i]) wanted.push_back(specs[i]);
  std::vector<V> produced = t.Emit(name, inputs, wanted);
  std::vector<V> r(specs.size(), kNone);
  size_t k = 0;
  for (size_t i = 0; i < specs.size(); ++i)
    if (need[i]) r[i] = produced[k++];
  return r;
}

// ---- views ---------------------------------------------------------------------------------

V Ops::View(V x, const Shape& shape) {
  auto strides = ComputeStride(t_.shape(x), t_.meta(x).strides, shape);
  if (!strides) Bug("view of a tensor whose strides do not allow it");
  V out = t_.EmitView("aten.view", x, shape, *strides);
  t_.Record({out}, {x},
            [this, xs = t_.shape(x)](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
              return std::vector<V>{Reshape(g[0], xs)};
            });
  return out;
}

V Ops::Reshape(V x, const Shape& shape) {
  auto strides = ComputeStride(t_.shape(x), t_.meta(x).strides, shape);
  if (!strides) return UnsafeView(Clone(x), shape);
  V out = t_.EmitView("aten._reshape_alias", x, shape, *strides);
  t_.Record({out}, {x},
            [this, xs = t_.shape(x)](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
              return std::vector<V>{Reshape(g[0], xs)};
            });
  return out;
}

V Ops::UnsafeView(V x, const Shape& shape) {
  if (!t_.is_contiguous(x)) Bug("_unsafe_view of a non-contiguous tensor");
  V out = t_.EmitView("aten._unsafe_view", x, shape, ContiguousStrides(shape));
  t_.Record({out}, {x},
            [this, xs = t_.shape(x)](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
              return std::vector<V>{Reshape(g[0], xs)};
            });
  return out;
}

V Ops::T(V x) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  if (m.shape.size() != 2) Bug("t() of a tensor that is not 2-D");
  V out = t_.EmitView("aten.t", x, {m.shape[1], m.shape[0]}, {m.strides[1], m.strides[0]});
  t_.Record({out}, {x}, [this](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{T(g[0])};
  });
  return out;
}

V Ops::Transpose(V x, std::int64_t d0, std::int64_t d1) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  d0 = WrapDim(d0, t_.dim(x));
  d1 = WrapDim(d1, t_.dim(x));
  Shape shape = m.shape, strides = m.strides;
  std::swap(shape[U(d0)], shape[U(d1)]);
  std::swap(strides[U(d0)], strides[U(d1)]);
  V out = t_.EmitView("aten.transpose", x, shape, strides);
  t_.Record({out}, {x}, [this, d0, d1](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{Transpose(g[0], d0, d1)};
  });
  return out;
}

V Ops::Permute(V x, const std::vector<std::int64_t>& dims) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  Shape shape(dims.size()), strides(dims.size());
  std::vector<std::int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    shape[i] = m.shape[U(dims[i])];
    strides[i] = m.strides[U(dims[i])];
    inverse[U(dims[i])] = static_cast<std::int64_t>(i);
  }
  V out = t_.EmitView("aten.permute", x, shape, strides);
  t_.Record({out}, {x}, [this, inverse](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{Permute(g[0], inverse)};
  });
  return out;
}

V Ops::Expand(V x, const Shape& shape) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  const size_t lead = shape.size() - m.shape.size();
  Shape strides(shape.size(), 0);
  for (size_t i = lead; i < shape.size(); ++i)
    strides[i] = m.shape[i - lead] == shape[i] ? m.strides[i - lead] : 0;
  V out = t_.EmitView("aten.expand", x, shape, strides);
  t_.Record({out}, {x}, [xs = m.shape](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.SumTo(g[0], xs)};
  });
  return out;
}

// Saved outputs need no detach here: eager autograd saves them without dispatching one
// (docs/generators.md, "Conventions"); this is Tensor.detach() called by model code.
V Ops::Detach(V x) { return t_.EmitView("aten.detach", x, t_.shape(x), t_.meta(x).strides); }

V Ops::Slice(V x, std::int64_t dim, std::int64_t start, std::int64_t end) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  dim = WrapDim(dim, t_.dim(x));
  Shape shape = m.shape;
  shape[U(dim)] = end - start;
  V out = t_.EmitView("aten.slice", x, shape, m.strides);
  t_.Record({out}, {x}, [xs = m.shape](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.slice_backward", {g[0]}, xs, t.dtype(g[0]))};
  });
  return out;
}

V Ops::Select(V x, std::int64_t dim, std::int64_t /*index*/) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  dim = WrapDim(dim, t_.dim(x));
  Shape shape = m.shape, strides = m.strides;
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  V out = t_.EmitView("aten.select", x, shape, strides);
  t_.Record({out}, {x}, [xs = m.shape](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.select_backward", {g[0]}, xs, t.dtype(g[0]))};
  });
  return out;
}

std::vector<V> Ops::Split(V x, std::int64_t size, std::int64_t dim) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  dim = WrapDim(dim, t_.dim(x));
  const std::int64_t n = m.shape[U(dim)] / size;
  std::vector<Shape> shapes(U(n), m.shape), strides(U(n), m.strides);
  for (auto& s : shapes) s[U(dim)] = size;
  std::vector<V> outs = t_.EmitViews("aten.split", x, shapes, strides);
  t_.Record(outs, {x}, [xs = m.shape](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    for (V p : g)
      if (p == kNone) Bug("split backward with a missing gradient");
    return std::vector<V>{t.Emit1("aten.cat", g, xs, t.dtype(g[0]))};
  });
  return outs;
}

// ---- pointwise -----------------------------------------------------------------------------

V Ops::Clone(V x) {
  V out = t_.Emit1("aten.clone", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{g[0]};
  });
  return out;
}

V Ops::Add(V a, V b) {
  V out = t_.Emit1("aten.add", {a, b}, Broadcast(t_.shape(a), t_.shape(b)),
                   PromoteTypes(t_.dtype(a), t_.dtype(b)));
  t_.Record({out}, {a, b}, [](Tape&, const std::vector<V>& g, const std::vector<bool>& need) {
    return std::vector<V>{need[0] ? g[0] : kNone, need[1] ? g[0] : kNone};
  });
  return out;
}

V Ops::AddInPlace(V a, V b) {
  V out = t_.EmitInPlace("aten.add_", a, {b});
  t_.Record({out}, {a, b}, [](Tape&, const std::vector<V>& g, const std::vector<bool>& need) {
    return std::vector<V>{need[0] ? g[0] : kNone, need[1] ? g[0] : kNone};
  });
  return out;
}

V Ops::Mul(V a, V b) {
  V out = t_.Emit1("aten.mul", {a, b}, Broadcast(t_.shape(a), t_.shape(b)),
                   PromoteTypes(t_.dtype(a), t_.dtype(b)));
  // MulBackward0 computes the second operand's gradient first (like mm's).
  t_.Record({out}, {a, b}, [a, b](Tape& t, const std::vector<V>& g, const std::vector<bool>& need) {
    std::vector<V> r(2, kNone);
    if (need[1])
      r[1] = t.Emit1("aten.mul", {g[0], a}, t.shape(g[0]), PromoteTypes(t.dtype(g[0]), t.dtype(a)));
    if (need[0])
      r[0] = t.Emit1("aten.mul", {g[0], b}, t.shape(g[0]), PromoteTypes(t.dtype(g[0]), t.dtype(b)));
    return r;
  });
  return out;
}

V Ops::MulScalar(V a) {
  V out = t_.Emit1("aten.mul", {a}, t_.shape(a), t_.dtype(a));
  t_.Record({out}, {a}, [](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.mul", {g[0]}, t.shape(g[0]), t.dtype(g[0]))};
  });
  return out;
}

V Ops::DivScalar(V a) {
  V out = t_.Emit1("aten.div", {a}, t_.shape(a), t_.dtype(a));
  t_.Record({out}, {a}, [](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.div", {g[0]}, t.shape(g[0]), t.dtype(g[0]))};
  });
  return out;
}

V Ops::MaskedFill(V x, V mask) {
  V out = t_.Emit1("aten.masked_fill", {x, mask}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [mask](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.masked_fill", {g[0], mask}, t.shape(g[0]), t.dtype(g[0]))};
  });
  return out;
}

V Ops::Gelu(V x) {
  V out = t_.Emit1("aten.gelu", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [x](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.gelu_backward", {g[0], x}, t.shape(x), t.dtype(x))};
  });
  return out;
}

V Ops::Tanh(V x) {
  V out = t_.Emit1("aten.tanh", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [out](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.tanh_backward", {g[0], out}, t.shape(out), t.dtype(out))};
  });
  return out;
}

V Ops::ReluInPlace(V x) {
  V out = t_.EmitInPlace("aten.relu_", x, {});
  t_.Record({out}, {x}, [out](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{
        t.Emit1("aten.threshold_backward", {g[0], out}, t.shape(out), t.dtype(out))};
  });
  return out;
}

V Ops::Relu6InPlace(V x) {
  // hardtanh_'s derivative needs the input, so autograd saves a clone before the write.
  V original = t_.Emit1("aten.clone", {x}, t_.shape(x), t_.dtype(x));
  V out = t_.EmitInPlace("aten.hardtanh_", x, {});
  t_.Record({out}, {x}, [original](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{
        t.Emit1("aten.hardtanh_backward", {g[0], original}, t.shape(original), t.dtype(g[0]))};
  });
  return out;
}

V Ops::Mean(V x, const std::vector<std::int64_t>& dims) {
  Shape shape = t_.shape(x);
  for (std::int64_t d : dims) shape[U(WrapDim(d, t_.dim(x)))] = 1;
  V out = t_.Emit1("aten.mean", {x}, shape, t_.dtype(x));
  t_.Record({out}, {x},
            [xs = t_.shape(x)](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
              V e = t.EmitView("aten.expand", g[0], xs, Shape(xs.size(), 0));
              return std::vector<V>{t.Emit1("aten.div", {e}, xs, t.dtype(e))};
            });
  return out;
}

V Ops::Cat(const std::vector<V>& xs, std::int64_t dim) {
  dim = WrapDim(dim, t_.dim(xs[0]));
  Shape shape = t_.shape(xs[0]);
  shape[U(dim)] = 0;
  std::vector<std::int64_t> sizes;
  for (V x : xs) {
    shape[U(dim)] += t_.shape(x)[U(dim)];
    sizes.push_back(t_.shape(x)[U(dim)]);
  }
  V out = t_.Emit1("aten.cat", xs, shape, t_.dtype(xs[0]));
  t_.Record(std::vector<V>{out}, xs,
            [this, dim, sizes](Tape&, const std::vector<V>& g, const std::vector<bool>& need) {
              std::vector<V> r;
              std::int64_t offset = 0;
              for (size_t i = 0; i < sizes.size(); ++i) {
                r.push_back(need[i] ? Slice(g[0], dim, offset, offset + sizes[i]) : kNone);
                offset += sizes[i];
              }
              return r;
            });
  return out;
}

V Ops::Dropout(V x, double p) {
  if (p <= 0.0) return x;  // F.dropout returns its input unchanged
  if (device_ == Device::kCuda) {
    auto outs =
        t_.Emit("aten.native_dropout", {x},
                {Tape::Out{t_.shape(x), t_.dtype(x)}, Tape::Out{t_.shape(x), DType::kBool}});
    V mask = outs[1];
    t_.Record({outs[0]}, {x}, [mask](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
      return std::vector<V>{
          t.Emit1("aten.native_dropout_backward", {g[0], mask}, t.shape(g[0]), t.dtype(g[0]))};
    });
    return outs[0];
  }
  V mask = t_.Emit1("aten.empty_like", {x}, t_.shape(x), t_.dtype(x));
  mask = t_.EmitInPlace("aten.bernoulli_", mask, {});
  mask = t_.EmitInPlace("aten.div_", mask, {});
  return Mul(x, mask);
}

// ---- matrix products ---------------------------------------------------------------------

V Ops::Mm(V a, V b) {
  const Shape as = t_.shape(a), ast = t_.meta(a).strides;
  const Shape bs = t_.shape(b), bst = t_.meta(b).strides;
  V out = t_.Emit1("aten.mm", {a, b}, {as[0], bs[1]}, t_.dtype(a));
  t_.Record({out}, {a, b},
            [this, a, b, as, ast, bs, bst](Tape& t, const std::vector<V>& g,
                                           const std::vector<bool>& need) {
              std::vector<V> r(2, kNone);
              const V grad = g[0];
              if (need[1]) {  // mm_mat2_backward
                if (ColumnMajor(bs, bst)) {
                  V gt = T(grad);
                  r[1] = T(t.Emit1("aten.mm", {gt, a}, {bs[1], bs[0]}, t.dtype(grad)));
                } else {
                  V at = T(a);
                  r[1] = t.Emit1("aten.mm", {at, grad}, bs, t.dtype(grad));
                }
              }
              if (need[0]) {  // mm_mat1_backward
                if (ColumnMajor(as, ast)) {
                  V gt = T(grad);
                  r[0] = T(t.Emit1("aten.mm", {b, gt}, {as[1], as[0]}, t.dtype(grad)));
                } else {
                  V bt = T(b);
                  r[0] = t.Emit1("aten.mm", {grad, bt}, as, t.dtype(grad));
                }
              }
              return r;
            });
  return out;
}

V Ops::Bmm(V a, V b) {
  const Shape as = t_.shape(a), bs = t_.shape(b);
  V out = t_.Emit1("aten.bmm", {a, b}, {as[0], as[1], bs[2]}, t_.dtype(a));
  t_.Record({out}, {a, b},
            [this, a, b, as, bs](Tape& t, const std::vector<V>& g, const std::vector<bool>& need) {
              std::vector<V> r(2, kNone);
              if (need[1])
                r[1] = t.Emit1("aten.bmm", {Transpose(a, 1, 2), g[0]}, bs, t.dtype(g[0]));
              if (need[0])
                r[0] = t.Emit1("aten.bmm", {g[0], Transpose(b, 1, 2)}, as, t.dtype(g[0]));
              return r;
            });
  return out;
}

V Ops::Addmm(V bias, V a, V b) {
  const Shape as = t_.shape(a), ast = t_.meta(a).strides;
  const Shape bs = t_.shape(b), bst = t_.meta(b).strides;
  V out = t_.Emit1("aten.addmm", {bias, a, b}, {as[0], bs[1]}, t_.dtype(a));
  t_.Record({out}, {bias, a, b},
            [this, a, b, as, ast, bs, bst](Tape& t, const std::vector<V>& g,
                                           const std::vector<bool>& need) {
              std::vector<V> r(3, kNone);
              const V grad = g[0];
              if (need[1]) {  // mm_mat1_backward
                if (ColumnMajor(as, ast)) {
                  V gt = T(grad);
                  r[1] = T(t.Emit1("aten.mm", {b, gt}, {as[1], as[0]}, t.dtype(grad)));
                } else {
                  V bt = T(b);
                  r[1] = t.Emit1("aten.mm", {grad, bt}, as, t.dtype(grad));
                }
              }
              if (need[2]) {  // mm_mat2_backward
                if (ColumnMajor(bs, bst)) {
                  V gt = T(grad);
                  r[2] = T(t.Emit1("aten.mm", {gt, a}, {bs[1], bs[0]}, t.dtype(grad)));
                } else {
                  V at = T(a);
                  r[2] = t.Emit1("aten.mm", {at, grad}, bs, t.dtype(grad));
                }
              }
              if (need[0]) r[0] = grad;  // the engine sums it down to the bias's shape
              return r;
            });
  return out;
}

V Ops::Matmul(V a, V b) {
  const Shape as = t_.shape(a), bs = t_.shape(b);
  if (as.size() == 2 && bs.size() == 2) return Mm(a, b);
  if (as.size() >= 3 && bs.size() == 2) {
    // Fold the batch dimensions into the rows.
    Shape out_shape = as;
    out_shape.back() = bs[1];
    V folded = Reshape(a, {NumElements(as) / as.back(), as.back()});
    return UnsafeView(Mm(folded, b), out_shape);
  }
  if (as.size() >= 3 && bs.size() >= 3 && as.size() == bs.size()) {
    Shape batch(as.begin(), as.end() - 2);
    const std::int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
    Shape ea = batch, eb = batch;
    ea.insert(ea.end(), {n, k});
    eb.insert(eb.end(), {k, m});
    const std::int64_t nb = NumElements(batch);
    V a3 = Reshape(Expand(a, ea), {nb, n, k});
    V b3 = Reshape(Expand(b, eb), {nb, k, m});
    Shape out_shape = batch;
    out_shape.insert(out_shape.end(), {n, m});
    return UnsafeView(Bmm(a3, b3), out_shape);
  }
  Bug("matmul of unsupported ranks");
}

V Ops::Linear(V x, V weight, V bias) {
  if (t_.dim(x) == 2 && bias != kNone) {
    V wt = T(weight);
    return Addmm(bias, x, wt);
  }
  if (bias != kNone && t_.dim(x) == 3 && t_.is_contiguous(x)) {
    const Shape xs = t_.shape(x);
    V wt = T(weight);
    V x2 = View(x, {xs[0] * xs[1], xs[2]});
    V y = Addmm(bias, x2, wt);
    return View(y, {xs[0], xs[1], t_.shape(weight)[0]});
  }
  V wt = T(weight);
  V y = Matmul(x, wt);
  return bias != kNone ? Add(y, bias) : y;
}

// ---- nn --------------------------------------------------------------------------------------

V Ops::Embedding(V weight, V indices) {
  Shape shape = t_.shape(indices);
  shape.push_back(t_.shape(weight)[1]);
  V out = t_.Emit1("aten.embedding", {weight, indices}, shape, t_.dtype(weight));
  t_.Record(
      {out}, {weight},
      [indices, ws = t_.shape(weight)](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
        return std::vector<V>{
            t.Emit1("aten.embedding_dense_backward", {g[0], indices}, ws, t.dtype(g[0]))};
      });
  return out;
}

V Ops::LayerNorm(V x, V weight, V bias) {
  Shape stat = t_.shape(x);
  stat.back() = 1;
  auto outs = t_.Emit("aten.native_layer_norm", {x, weight, bias},
                      {Tape::Out{t_.shape(x), t_.dtype(x)}, Tape::Out{stat, DType::kFloat32},
                       Tape::Out{stat, DType::kFloat32}});
  const V mean = outs[1], rstd = outs[2];
  t_.Record({outs[0]}, {x, weight, bias},
            [x, weight, bias, mean, rstd](Tape& t, const std::vector<V>& g,
                                          const std::vector<bool>& need) {
              return EmitMasked(t, "aten.native_layer_norm_backward",
                                {g[0], x, mean, rstd, weight, bias}, need,
                                {{t.shape(x), t.dtype(g[0])},
                                 {t.shape(weight), t.dtype(weight)},
                                 {t.shape(bias), t.dtype(bias)}});
            });
  return outs[0];
}

V Ops::Softmax(V x) {
  V out = t_.Emit1("aten._softmax", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [out](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{
        t.Emit1("aten._softmax_backward_data", {g[0], out}, t.shape(out), t.dtype(g[0]))};
  });
  return out;
}

V Ops::LogSoftmax(V x) {
  V out = t_.Emit1("aten._log_softmax", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [out](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{
        t.Emit1("aten._log_softmax_backward_data", {g[0], out}, t.shape(out), t.dtype(g[0]))};
  });
  return out;
}

V Ops::NllLoss(V log_probs, V target) {
  const bool per_pixel = t_.dim(log_probs) == 4;
  const std::string forward = per_pixel ? "aten.nll_loss2d_forward" : "aten.nll_loss_forward";
  const std::string backward = per_pixel ? "aten.nll_loss2d_backward" : "aten.nll_loss_backward";
  auto outs = t_.Emit(forward, {log_probs, target},
                      {Tape::Out{{}, t_.dtype(log_probs)}, Tape::Out{{}, t_.dtype(log_probs)}});
  const V total_weight = outs[1];
  t_.Record({outs[0]}, {log_probs},
            [log_probs, target, total_weight, backward](Tape& t, const std::vector<V>& g,
                                                        const std::vector<bool>&) {
              return std::vector<V>{t.Emit1(backward, {g[0], log_probs, target, total_weight},
                                            t.shape(log_probs), t.dtype(log_probs))};
            });
  return outs[0];
}

}  // namespace roam::gen
