#include "gen/optim.h"

namespace roam::gen {
namespace {

V State(Tape& t, V param) {
  return t.Input(t.shape(param), t.dtype(param), TensorKind::kOptimizerState);
}

// Each update returns the parameter's value after its in-place writes.
V Sgd(Tape& t, V param, V grad, const TrainingConfig& c) {
  V d_p = grad;
  if (c.weight_decay != 0.0) d_p = t.Emit1("aten.add", {d_p, param}, t.shape(d_p), t.dtype(d_p));
  if (c.momentum != 0.0) {
    V buf = State(t, param);
    buf = t.EmitInPlace("aten.mul_", buf, {});
    buf = t.EmitInPlace("aten.add_", buf, {d_p});
    d_p = c.nesterov ? t.Emit1("aten.add", {d_p, buf}, t.shape(d_p), t.dtype(d_p)) : buf;
  }
  return t.EmitInPlace("aten.add_", param, {d_p});
}

// PyTorch 1.13's _single_tensor_adam without capturable/amsgrad. The step counter is a CPU
// scalar tensor (state_steps stay on the host when capturable=False): its add_ and the item()
// that reads it back for the bias corrections are host ops, so neither they nor the counter
// are in the device graph; the bias corrections reach div and addcdiv_ as Python floats.
V Adam(Tape& t, V param, V grad, const TrainingConfig& c, bool decoupled) {
  V exp_avg = State(t, param);
  V exp_avg_sq = State(t, param);
  if (decoupled) {
    param = t.EmitInPlace("aten.mul_", param, {});
  } else if (c.weight_decay != 0.0) {
    grad = t.Emit1("aten.add", {grad, param}, t.shape(grad), t.dtype(grad));
  }
  exp_avg = t.EmitInPlace("aten.mul_", exp_avg, {});
  exp_avg = t.EmitInPlace("aten.add_", exp_avg, {grad});
  exp_avg_sq = t.EmitInPlace("aten.mul_", exp_avg_sq, {});
  exp_avg_sq = t.EmitInPlace("aten.addcmul_", exp_avg_sq, {grad});
  V denom = t.Emit1("aten.sqrt", {exp_avg_sq}, t.shape(exp_avg_sq), t.dtype(exp_avg_sq));
  denom = t.Emit1("aten.div", {denom}, t.shape(denom), t.dtype(denom));
  denom = t.EmitInPlace("aten.add_", denom, {});
  return t.EmitInPlace("aten.addcdiv_", param, {exp_avg, denom});
}

}  // namespace

void EmitOptimizerStep(Tape& tape, const std::vector<V>& params, const TrainingConfig& config) {
  const Phase saved = tape.phase();
  tape.set_phase(Phase::kOptimizer);
  const bool master_copies = config.precision == Precision::kBf16Master;
  for (V model_param : params) {
    V grad = tape.grad(model_param);
    if (grad == kNone) continue;
    // bf16-master: the optimizer steps a float32 master copy (persistent, as optimizer state)
    // with the gradient cast to float32, then copies the master back into the model's weight.
    V param = model_param;
    if (master_copies) {
      param = tape.Input(tape.shape(model_param), DType::kFloat32, TensorKind::kOptimizerState);
      grad = tape.Emit1("aten._to_copy", {grad}, tape.shape(grad), DType::kFloat32);
    }
    switch (config.optimizer) {
      case OptimizerKind::kSgd:
        param = Sgd(tape, param, grad, config);
        break;
      case OptimizerKind::kAdam:
        param = Adam(tape, param, grad, config, /*decoupled=*/false);
        break;
      case OptimizerKind::kAdamW:
        param = Adam(tape, param, grad, config, /*decoupled=*/true);
        break;
    }
    if (master_copies) tape.EmitInPlace("aten.copy_", model_param, {param});
  }
  tape.set_phase(saved);
}

}  // namespace roam::gen
