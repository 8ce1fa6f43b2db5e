"""What to trace: the model, the batch and the optimizer, from command-line options or from a
roam YAML config, which roam itself resolves (`roam config FILE --json`: the keys
docs/configs.md documents, read by the same code as the C++ generator's).

Every problem with the request raises UsageError, whose message names the file and the field;
the command line turns it into exit status 2.
"""

import difflib
import json
import os
import shutil
import subprocess
from pathlib import Path
from dataclasses import dataclass, field

import torch

from .gpt2 import GPT2Config
from .llama import LlamaConfig


class UsageError(Exception):
    """Bad user input: an unknown model or option, or a malformed config."""


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
OPTIMIZERS = ("adam", "adamw", "sgd")
DROPOUT_FORMS = ("cuda", "cpu")
# training.precision: fp32; autocast to bfloat16 around the forward pass with float32
# weights, gradients and optimizer (bf16-mixed); or the model in bfloat16 with float32 master
# copies of its weights in the optimizer (bf16-master). docs/generators.md, "Mixed precision".
PRECISIONS = ("fp32", "bf16-mixed", "bf16-master")
ATTENTIONS = ("sdpa", "math")


@dataclass(frozen=True)
class OptimizerSpec:
    name: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.0  # sgd only
    weight_decay: float = 0.0  # adamw applies it decoupled; adam and sgd add it to the gradient
    nesterov: bool = False  # sgd only
    beta1: float = 0.9  # adam and adamw
    beta2: float = 0.999
    eps: float = 1e-8
    # Adam/AdamW: the value of state["step"] before the traced step. The step counters are host
    # tensors; their value only changes the bias-correction scalars baked into the trace.
    step: int = 1


@dataclass(frozen=True)
class StepSpec:
    name: str
    family: str  # "gpt2", "llama", "torchvision" or "segmentation"
    # torchvision model name ("vit": VisionTransformer from model_kwargs), or segmentation's
    # config family (fcn8, segnet, unet)
    model: str = ""
    model_kwargs: tuple = ()  # (name, value) pairs for the torchvision constructor
    gpt2: GPT2Config = field(default_factory=GPT2Config)
    llama: LlamaConfig = field(default_factory=LlamaConfig)
    batch: int = 32
    image_size: int = 224
    num_classes: int = 1000
    dtype: str = "float32"
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)
    dropout_form: str = "cuda"
    precision: str = "fp32"

    @property
    def torch_dtype(self):
        return DTYPES[self.dtype]


def torchvision_models():
    import torchvision.models

    return sorted(torchvision.models.list_models(module=torchvision.models))


def _suggest(word, choices):
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def torchvision_spec(model, batch=32, image_size=224, optimizer="adam", num_classes=1000,
                     dropout_form="cuda", name=None):
    known = torchvision_models()
    if model not in known:
        raise UsageError(f"--model: unknown torchvision classification model '{model}'"
                         f"{_suggest(model, known)}; known models: {', '.join(known)}")
    _check_positive("--batch", batch)
    _check_positive("--image-size", image_size)
    _check_positive("--num-classes", num_classes)
    _check_choice("--optimizer", optimizer, OPTIMIZERS)
    _check_choice("--dropout", dropout_form, DROPOUT_FORMS)
    return StepSpec(name=name or f"{model}-b{batch}", family="torchvision", model=model,
                    batch=batch, image_size=image_size, num_classes=num_classes,
                    optimizer=OptimizerSpec(name=optimizer), dropout_form=dropout_form)


def _check_positive(what, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"{what}: must be a positive integer, got {value!r}")


def _check_choice(what, value, choices):
    if value not in choices:
        raise UsageError(f"{what}: must be one of {', '.join(choices)}, got {value!r}"
                         f"{_suggest(str(value), choices)}")


TRACED_FAMILIES = ("gpt2", "vit", "resnet", "vgg", "alexnet", "mobilenet_v2", "llama", "fcn8",
                   "segnet", "unet")


def _find_roam():
    """$ROAM_BINARY, the release build next to this checkout, or roam on PATH."""
    root = Path(__file__).resolve().parents[3]
    for candidate in (os.environ.get("ROAM_BINARY"), root / "build" / "release" / "apps" / "roam",
                      shutil.which("roam")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return str(candidate)
    raise UsageError("cannot find the roam binary, which reads configs: build it "
                     "(cmake --build --preset release), or set ROAM_BINARY")


def _resolved_config(path, overrides):
    """The model and training sections of a config as roam resolves them (`roam config PATH
    --json`): every default filled in and every key checked by the one reader the C++
    generator uses, so the schema lives in roam alone (config/, docs/configs.md)."""
    try:
        with open(path, encoding="utf-8"):
            pass
    except OSError as e:
        raise UsageError(f"{path}: cannot read config: {e.strerror}") from None
    command = [_find_roam(), "config", str(path), "--json"]
    for override in overrides:
        command += ["--set", override]
    r = subprocess.run(command, capture_output=True, text=True)
    message = r.stderr.strip()
    if message.startswith("roam: error: "):
        message = message[len("roam: error: "):]
    if r.returncode != 0:
        raise UsageError(message or f"{path}: roam config failed (exit {r.returncode})")
    return json.loads(r.stdout)


def load_config(path, batch=None, optimizer=None, dropout_form=None, name=None):
    """Reads a roam YAML config (docs/configs.md) through roam. GPT-2 uses the built-in nanoGPT
    model; the image families map to the torchvision model the C++ generator reproduces. batch,
    optimizer and dropout_form (cuda/cpu) override the file, as `--set` would."""
    overrides = []
    if batch is not None:
        _check_positive("--batch", batch)
        overrides.append(f"model.batch={batch}")
    if optimizer is not None:
        _check_choice("--optimizer", optimizer, OPTIMIZERS)
        overrides.append(f"training.optimizer={optimizer}")
    if dropout_form is not None:
        _check_choice("--dropout", dropout_form, DROPOUT_FORMS)
        overrides.append(f"model.device={dropout_form}")
    resolved = _resolved_config(path, overrides)
    model, training = resolved["model"], resolved["training"]
    family = model["family"]
    if family not in TRACED_FAMILIES:
        raise UsageError(f"{path}: model.family: {family} has no PyTorch model here to trace "
                         f"(traced families: {', '.join(TRACED_FAMILIES)})")
    opt = OptimizerSpec(
        name=training["optimizer"], lr=training["lr"], weight_decay=training["weight_decay"],
        momentum=training.get("momentum", 0.0), nesterov=training.get("nesterov", False),
        beta1=training.get("beta1", 0.9), beta2=training.get("beta2", 0.999),
        eps=training.get("eps", 1e-8))
    common = dict(name=str(name or model["name"]), batch=model["batch"], dtype=model["dtype"],
                  optimizer=opt, dropout_form=model["device"], precision=training["precision"])

    if family == "llama":
        llama = LlamaConfig(n_layer=model["n_layer"], n_embd=model["n_embd"],
                            n_head=model["n_head"], n_kv_head=model["n_kv_head"],
                            n_inner=model["n_inner"], seq_len=model["seq_len"],
                            vocab=model["vocab"], n_positions=model["n_positions"],
                            tie_embeddings=model["tie_embeddings"],
                            attention=model["attention"])
        return StepSpec(family="llama", llama=llama, **common)

    if family == "gpt2":
        gpt2 = GPT2Config(n_layer=model["n_layer"], n_embd=model["n_embd"],
                          n_head=model["n_head"], seq_len=model["seq_len"],
                          vocab=model["vocab"], dropout=model["dropout"],
                          n_positions=model["n_positions"], n_inner=model["n_inner"],
                          tie_embeddings=model["tie_embeddings"])
        return StepSpec(family="gpt2", gpt2=gpt2, **common)

    if family in ("fcn8", "segnet", "unet"):  # roam_torch/segmentation.py
        kwargs = {"dropout": model["dropout"]} if family == "fcn8" else {}
        return StepSpec(family="segmentation", model=family, image_size=model["image_size"],
                        num_classes=model["num_classes"],
                        model_kwargs=tuple(sorted(kwargs.items())), **common)

    kwargs = {}
    if family == "resnet":
        tv_name = f"resnet{model['depth']}"
    elif family == "vgg":
        tv_name = f"vgg{model['depth']}" + ("_bn" if model["batch_norm"] else "")
        kwargs["dropout"] = model["dropout"]
    elif family == "alexnet":
        tv_name = "alexnet"
        kwargs["dropout"] = model["dropout"]
    elif family == "mobilenet_v2":
        tv_name = "mobilenet_v2"
        kwargs["dropout"] = model["dropout"]
        kwargs["width_mult"] = model["width_mult"]
    else:  # vit
        tv_name = "vit"
        n_embd = model["n_embd"]
        kwargs.update(patch_size=model["patch_size"], num_layers=model["n_layer"],
                      num_heads=model["n_head"], hidden_dim=n_embd,
                      mlp_dim=model["n_inner"] or 4 * n_embd, dropout=model["dropout"])
    return StepSpec(family="torchvision", model=tv_name, image_size=model["image_size"],
                    num_classes=model["num_classes"],
                    model_kwargs=tuple(sorted(kwargs.items())), **common)
