"""The per-op cost of an exported op, in FLOP-equivalents (docs/formats.md, "Costs"): the same
model as the C++ generator's (gen/cost.h), from the traced shapes.

In: the op's aten name, its arguments (fx nodes carrying fake values), its traced results (the
values of the outputs the graph has, in result order), and the bytes of the graph tensors it
reads and makes. Out: max(FLOPs, COST_PER_BYTE x bytes read
and written), the roofline estimate on the reference device; 0 for a view (an op that only
makes tensors on storage that already exists and writes nothing). FLOPs are counted for
matrix products and convolutions (2 per multiply-add), reading the contracted dimension from
the argument the aten signature puts it in; every other op is memory-bound.
"""

import math

import torch
import torch.fx as fx

# core/graph.h kCostPerByte: an A100's TF32 matmul rate over its memory bandwidth (156 TFLOP/s
# over 1.56 TB/s), so a FLOP-equivalent is 1/(156e12) s on that device.
COST_PER_BYTE = 100.0


def _shape(arg):
    val = arg.meta.get("val") if isinstance(arg, fx.Node) else arg
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _first_output_shape(result):
    if isinstance(result, torch.Tensor):
        return tuple(result.shape)
    if isinstance(result, (list, tuple)):
        for r in result:
            if isinstance(r, torch.Tensor):
                return tuple(r.shape)
    return None


def flops(name, args, result):
    """FLOPs of the compute-bound ops (gen/cost.cpp's Flops); 0 for the rest."""
    out = _first_output_shape(result)
    if out is None:
        return 0.0
    out_elems = float(math.prod(out))

    def arg_shape(i):
        return _shape(args[i]) if i < len(args) else None

    if name in ("aten.mm", "aten.bmm"):
        a = arg_shape(0)
        return 2.0 * out_elems * a[-1] if a else 0.0
    if name in ("aten.addmm", "aten.baddbmm"):
        a = arg_shape(1)
        return 2.0 * out_elems * a[-1] if a else 0.0
    if name == "aten.convolution":
        # (input, weight, bias, stride, padding, dilation, transposed, ...): one multiply-add
        # per weight element [Cout, Cin/g, kh, kw] at each output position, or for a
        # transposed convolution (weight [Cin, Cout/g, kh, kw]) at each input position.
        return 2.0 * _conv_multiply_adds(arg_shape(0), out, arg_shape(1), _transposed(args, 6))
    if name in ("aten._scaled_dot_product_flash_attention",
                "aten._scaled_dot_product_flash_attention_backward"):
        # q [B, H, T, hd], k [B, H, S, hd]: half of q k^T and p v's 4*B*H*T*S*hd (causal);
        # the backward 2.5 times the forward.
        backward = name.endswith("_backward")
        q, k = arg_shape(1 if backward else 0), arg_shape(2 if backward else 1)
        if not q or not k or len(q) != 4 or len(k) != 4:
            return 0.0
        forward = 2.0 * math.prod(q) * k[2]
        return 2.5 * forward if backward else forward
    if name == "aten.convolution_backward":
        # (grad_out, input, weight, ...): the input and weight gradients, a convolution each.
        return 4.0 * _conv_multiply_adds(arg_shape(1), arg_shape(0), arg_shape(2),
                                         _transposed(args, 7))
    return 0.0


def _conv_multiply_adds(input, output, weight, transposed):
    """One per weight element at each position (every element but the channels') of the output,
    or of the input for a transposed convolution; 0 where the weight's or output's shape is
    unknown."""
    if not weight or output is None:
        return 0.0
    side = input if transposed and input else output
    return math.prod(s for i, s in enumerate(side) if i != 1) * math.prod(weight)


def _transposed(args, i):
    return i < len(args) and args[i] is True


def estimate(name, args, result, bytes_moved):
    """The op's cost: max(FLOPs, COST_PER_BYTE x bytes_moved)."""
    return max(flops(name, args, result), COST_PER_BYTE * float(bytes_moved))
