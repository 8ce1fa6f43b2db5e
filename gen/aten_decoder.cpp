// The aten operators of the llama family and of autocast (gen/aten.h): casts, RMSNorm's
// pointwise ops, SiLU, the views of repeat_kv and the fused attention kernel, with their
// backward formulas as PyTorch 1.13's derivatives.yaml (2.x's for the fused attention).
#include <cmath>

#include "core/types.h"
#include "gen/aten.h"

namespace roam::gen {
V Ops::Cast(V x, DType dtype) {
  const DType from = t_.dtype(x);
  if (from == dtype) return x;
  V out = t_.Emit1("aten._to_copy", {x}, t_.shape(x), dtype);
  t_.Record({out}, {x}, [from](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten._to_copy", {g[0]}, t.shape(g[0]), from)};
  });
  return out;
}

V Ops::AddScalar(V x) {
  V out = t_.Emit1("aten.add", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{g[0]};
  });
  return out;
}

V Ops::PowScalar(V x) {
  V out = t_.Emit1("aten.pow", {x}, t_.shape(x), t_.dtype(x));
  // pow_backward: grad * (exponent * self.pow(exponent - 1)).
  t_.Record({out}, {x}, [x](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    const Shape s = t.shape(x);  // a copy: emitting grows the tape
    V p = t.Emit1("aten.pow", {x}, s, t.dtype(x));
    p = t.Emit1("aten.mul", {p}, s, t.dtype(x));
    return std::vector<V>{
        t.Emit1("aten.mul", {g[0], p}, s, PromoteTypes(t.dtype(g[0]), t.dtype(x)))};
  });
  return out;
}

V Ops::Rsqrt(V x) {
  V out = t_.Emit1("aten.rsqrt", {x}, t_.shape(x), t_.dtype(x));
  // -0.5 * grad * result.pow(3): the compiler evaluates the pow first.
  t_.Record({out}, {x}, [out](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    const Shape s = t.shape(out);  // a copy: emitting grows the tape
    V p = t.Emit1("aten.pow", {out}, s, t.dtype(out));
    V h = t.Emit1("aten.mul", {g[0]}, s, t.dtype(g[0]));
    return std::vector<V>{t.Emit1("aten.mul", {h, p}, s, t.dtype(g[0]))};
  });
  return out;
}

V Ops::Neg(V x) {
  V out = t_.Emit1("aten.neg", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.neg", {g[0]}, t.shape(g[0]), t.dtype(g[0]))};
  });
  return out;
}

V Ops::Silu(V x) {
  V out = t_.Emit1("aten.silu", {x}, t_.shape(x), t_.dtype(x));
  t_.Record({out}, {x}, [x](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{t.Emit1("aten.silu_backward", {g[0], x}, t.shape(x), t.dtype(g[0]))};
  });
  return out;
}

V Ops::Unsqueeze(V x, std::int64_t dim) {
  const TensorMeta m = t_.meta(x);  // a copy: emitting grows the tape
  Shape shape = m.shape, strides = m.strides;
  // ATen's inferUnsqueezeGeometry: the new dimension's stride spans the one it precedes.
  const std::int64_t stride = U(dim) >= m.shape.size() ? 1 : m.shape[U(dim)] * m.strides[U(dim)];
  shape.insert(shape.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  V out = t_.EmitView("aten.unsqueeze", x, shape, strides);
  t_.Record({out}, {x},
            [dim, xs = m.shape](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
              Shape squeezed = t.meta(g[0]).strides;
              squeezed.erase(squeezed.begin() + dim);
              return std::vector<V>{t.EmitView("aten.squeeze", g[0], xs, squeezed)};
            });
  return out;
}

V Ops::Alias(V x) {
  V out = t_.EmitView("aten.alias", x, t_.shape(x), t_.meta(x).strides);
  t_.Record({out}, {x}, [](Tape&, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{g[0]};
  });
  return out;
}

V Ops::ScaledDotProductAttention(V q, V k, V v) {
  const Shape qs = t_.shape(q);  // [B, H, T, hd]
  const std::int64_t B = qs[0], H = qs[1], T = qs[2], hd = qs[3];
  // The flash kernels allocate [B, T, H, hd] and hand out its transpose.
  const Shape bthd_strides = {T * H * hd, hd, H * hd, 1};
  auto outs =
      t_.Emit("aten._scaled_dot_product_flash_attention", {q, k, v},
              {Tape::Out{qs, t_.dtype(q), bthd_strides}, Tape::Out{{B, H, T}, DType::kFloat32}});
  const V out = outs[0], logsumexp = outs[1];
  t_.Record({out}, {q, k, v},
            [q, k, v, out, logsumexp](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
              auto strided = [&](V x) {
                const Shape& s = t.shape(x);
                return Tape::Out{s, t.dtype(x), {s[2] * s[1] * s[3], s[3], s[1] * s[3], 1}};
              };
              // One kernel computes all three gradients, needed or not.
              return t.Emit("aten._scaled_dot_product_flash_attention_backward",
                            {g[0], q, k, v, out, logsumexp}, {strided(q), strided(k), strided(v)});
            });
  return out;
}

}  // namespace roam::gen
