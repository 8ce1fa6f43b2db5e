#include "gen/optim.h"

namespace roam::gen {
namespace {

V State(Tape& t, V param) {
  return t.Input(t.shape(param), t.dtype(param), TensorKind::kOptimizerState);
}

void Sgd(Tape& t, V param, V grad, const TrainingConfig& c) {
  V d_p = grad;
  if (c.weight_decay != 0.0) d_p = t.Emit1("aten.add", {d_p, param}, t.shape(d_p), t.dtype(d_p));
  if (c.momentum != 0.0) {
    V buf = State(t, param);
    buf = t.EmitInPlace("aten.mul_", buf, {});
    buf = t.EmitInPlace("aten.add_", buf, {d_p});
    d_p = c.nesterov ? t.Emit1("aten.add", {d_p, buf}, t.shape(d_p), t.dtype(d_p)) : buf;
  }
  t.EmitInPlace("aten.add_", param, {d_p});
}

// PyTorch 1.13's _single_tensor_adam without capturable/amsgrad. The step counter is a CPU
// scalar tensor (state_steps stay on the host when capturable=False): its add_ and the item()
// that reads it back for the bias corrections are host ops, so neither they nor the counter
// are in the device graph; the bias corrections reach div and addcdiv_ as Python floats.
void Adam(Tape& t, V param, V grad, const TrainingConfig& c, bool decoupled) {
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
  t.EmitInPlace("aten.addcdiv_", param, {exp_avg, denom});
}

}  // namespace

void EmitOptimizerStep(Tape& tape, const std::vector<V>& params, const TrainingConfig& config) {
  const Phase saved = tape.phase();
  tape.set_phase(Phase::kOptimizer);
  for (V param : params) {
    const V grad = tape.grad(param);
    if (grad == kNone) continue;
    switch (config.optimizer) {
      case OptimizerKind::kSgd:
        Sgd(tape, param, grad, config);
        break;
      case OptimizerKind::kAdam:
        Adam(tape, param, grad, config, /*decoupled=*/false);
        break;
      case OptimizerKind::kAdamW:
        Adam(tape, param, grad, config, /*decoupled=*/true);
        break;
    }
  }
  tape.set_phase(saved);
}

}  // namespace roam::gen
