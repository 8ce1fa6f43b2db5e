"""What to trace: the model, the batch and the optimizer, from command-line options or from a
roam YAML config (the keys docs/configs.md documents for the C++ generator).

Every problem with the request raises UsageError, whose message names the file and the field;
the command line turns it into exit status 2.
"""

import difflib
import math
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
    family: str  # "gpt2" or "torchvision"
    model: str = ""  # torchvision model name ("vit": VisionTransformer from model_kwargs)
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


# Config keys (docs/configs.md, shared with the C++ generator), by the families they apply to.
_TRANSFORMER = ("gpt2", "bert", "vit", "llama")
_TOKEN = ("gpt2", "bert", "llama")
_IMAGE = ("vit", "resnet", "vgg", "alexnet", "mobilenet_v2")
_MODEL_KEYS = {
    "family": None, "name": None, "batch": None, "dtype": None, "device": None,
    "n_layer": _TRANSFORMER, "n_embd": _TRANSFORMER, "n_head": _TRANSFORMER,
    "n_inner": _TRANSFORMER,
    "dropout": ("gpt2", "bert", "vit", "vgg", "alexnet", "mobilenet_v2"),
    "seq_len": _TOKEN, "vocab": _TOKEN, "n_positions": _TOKEN,
    "tie_embeddings": ("gpt2", "llama"), "type_vocab": ("bert",),
    "n_kv_head": ("llama",), "attention": ("llama",),
    "image_size": _IMAGE, "num_classes": _IMAGE, "patch_size": ("vit",),
    "depth": ("resnet", "vgg"), "batch_norm": ("vgg",), "width_mult": ("mobilenet_v2",),
}
_TRAINING_KEYS = {
    "optimizer": None, "lr": None, "weight_decay": None, "momentum": ("sgd",),
    "nesterov": ("sgd",), "beta1": ("adam", "adamw"), "beta2": ("adam", "adamw"),
    "eps": ("adam", "adamw"), "precision": None,
}
FAMILIES = ("gpt2", "bert", "vit", "resnet", "vgg", "alexnet", "mobilenet_v2", "llama")
TRACED_FAMILIES = ("gpt2", "vit", "resnet", "vgg", "alexnet", "mobilenet_v2", "llama")


class _Config:
    """Typed access to one section of a config, with errors naming file and key."""

    def __init__(self, path, section, values, allowed, selector, selector_key):
        self.path, self.section, self.values = path, section, values
        for key in values:
            if key not in allowed:
                raise UsageError(f"{path}: {section}.{key}: unknown key"
                                 f"{_suggest(str(key), allowed)}")
            applies = allowed[key]
            if applies is not None and selector not in applies:
                raise UsageError(f"{path}: {section}.{key}: does not apply to "
                                 f"{selector_key} {selector}")

    def where(self, key):
        return f"{self.path}: {self.section}.{key}"

    def integer(self, key, default):
        value = self.values.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise UsageError(f"{self.where(key)}: must be a positive integer, got {value!r}")
        return value

    def number(self, key, default, low, high=math.inf, low_open=False, high_open=False):
        value = self.values.get(key, default)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
            math.isfinite(value) and (low < value if low_open else low <= value) and \
            (value < high if high_open else value <= high)
        if not ok:
            interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
            raise UsageError(f"{self.where(key)}: must be a number in {interval}, got {value!r}")
        return float(value)

    def boolean(self, key, default):
        value = self.values.get(key, default)
        if not isinstance(value, bool):
            raise UsageError(f"{self.where(key)}: must be true or false, got {value!r}")
        return value

    def choice(self, key, default, choices):
        value = self.values.get(key, default)
        if value not in choices:
            raise UsageError(f"{self.where(key)}: must be one of {', '.join(choices)}, got "
                             f"{value!r}{_suggest(str(value), choices)}")
        return value


def _read_yaml(path):
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"{path}: cannot read config: {e.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: YAML syntax error: {e.problem}") from None
    except yaml.YAMLError as e:
        raise UsageError(f"{path}: YAML error: {e}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: expected a mapping with a 'model' section")
    for key in ("model", "training"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise UsageError(f"{path}: {key}: expected a mapping")
    if doc.get("model") is None:
        raise UsageError(f"{path}: model: missing section")
    return doc


def load_config(path, batch=None, optimizer=None, dropout_form=None, name=None):
    """Reads a roam YAML config (docs/configs.md). GPT-2 uses the built-in nanoGPT model; the
    image families map to the torchvision model the C++ generator reproduces. batch,
    optimizer and dropout_form (cuda/cpu) override the file."""
    doc = _read_yaml(path)
    raw_model = doc["model"]
    family = raw_model.get("family")
    if family is None:
        raise UsageError(f"{path}: model.family: missing")
    if family not in FAMILIES:
        raise UsageError(f"{path}: model.family: unknown family {family!r}"
                         f"{_suggest(str(family), FAMILIES)}")
    model = _Config(path, "model", raw_model, _MODEL_KEYS, family, "family")
    raw_training = doc.get("training") or {}
    opt_name = _Config(path, "training", {k: v for k, v in raw_training.items()
                                          if k == "optimizer"}, _TRAINING_KEYS, None, "")
    opt_name = opt_name.choice("optimizer", "adam", OPTIMIZERS)
    if optimizer is not None:
        _check_choice("--optimizer", optimizer, OPTIMIZERS)
        opt_name = optimizer
    training = _Config(path, "training", raw_training, _TRAINING_KEYS, opt_name, "optimizer")
    if family not in TRACED_FAMILIES:
        raise UsageError(f"{path}: model.family: {family} has no PyTorch model here to trace "
                         f"(traced families: {', '.join(TRACED_FAMILIES)})")

    opt = OptimizerSpec(
        name=opt_name,
        lr=training.number("lr", 0.01 if opt_name == "sgd" else 0.001, 0.0, low_open=True),
        weight_decay=training.number("weight_decay", 0.01 if opt_name == "adamw" else 0.0,
                                     0.0),
        momentum=training.number("momentum", 0.0, 0.0),
        nesterov=training.boolean("nesterov", False),
        beta1=training.number("beta1", 0.9, 0.0, 1.0, high_open=True),
        beta2=training.number("beta2", 0.999, 0.0, 1.0, high_open=True),
        eps=training.number("eps", 1e-8, 0.0, low_open=True))
    if opt.nesterov and opt.momentum == 0:
        raise UsageError(f"{path}: training.nesterov: needs training.momentum > 0")

    precision = training.choice("precision", "bf16-mixed" if family == "llama" else "fp32",
                                PRECISIONS)
    if precision != "fp32" and family != "llama":
        raise UsageError(f"{training.where('precision')}: {precision} is modelled for family "
                         f"llama only (family {family} trains in fp32 or in model.dtype)")
    dtype = model.choice("dtype", "float32", tuple(DTYPES))
    if precision != "fp32" and dtype != "float32":
        raise UsageError(f"{model.where('dtype')}: {precision} keeps float32 master weights; "
                         f"model.dtype must be float32, got {dtype!r}")
    device = model.choice("device", "cuda", ("cuda", "cpu"))
    if dropout_form is not None:
        _check_choice("--dropout", dropout_form, DROPOUT_FORMS)
        device = dropout_form
    graph_name = name or raw_model.get("name") or Path(path).stem
    file_batch = model.integer("batch", 1 if family in _TOKEN else 32)
    if batch is not None:
        _check_positive("--batch", batch)
        file_batch = batch
    common = dict(name=str(graph_name), batch=file_batch, dtype=dtype, optimizer=opt,
                  dropout_form=device, precision=precision)

    if family == "llama":
        return StepSpec(family="llama", llama=_llama_config(model), **common)

    if family == "gpt2":
        n_embd = model.integer("n_embd", 768)
        n_head = model.integer("n_head", 12)
        if n_embd % n_head:
            raise UsageError(f"{model.where('n_embd')}: {n_embd} is not divisible by "
                             f"model.n_head = {n_head}")
        seq_len, n_positions, n_inner = _sequence_and_inner(model, 1024)
        gpt2 = GPT2Config(n_layer=model.integer("n_layer", 12), n_embd=n_embd, n_head=n_head,
                          seq_len=seq_len, vocab=model.integer("vocab", 50257),
                          dropout=model.number("dropout", 0.1, 0.0, 1.0, high_open=True),
                          n_positions=n_positions, n_inner=n_inner,
                          tie_embeddings=model.boolean("tie_embeddings", True))
        return StepSpec(family="gpt2", gpt2=gpt2, **common)

    image_size = model.integer("image_size", 224)
    num_classes = model.integer("num_classes", 1000)
    kwargs = {}
    if family == "resnet":
        depth = model.integer("depth", 18)
        if depth not in (18, 34, 50, 101, 152):
            raise UsageError(f"{model.where('depth')}: resnet depth must be 18, 34, 50, 101 "
                             f"or 152, got {depth}")
        tv_name = f"resnet{depth}"
    elif family == "vgg":
        depth = model.integer("depth", 11)
        if depth not in (11, 13, 16, 19):
            raise UsageError(f"{model.where('depth')}: vgg depth must be 11, 13, 16 or 19, "
                             f"got {depth}")
        tv_name = f"vgg{depth}" + ("_bn" if model.boolean("batch_norm", False) else "")
        kwargs["dropout"] = model.number("dropout", 0.5, 0.0, 1.0, high_open=True)
    elif family == "alexnet":
        tv_name = "alexnet"
        kwargs["dropout"] = model.number("dropout", 0.5, 0.0, 1.0, high_open=True)
    elif family == "mobilenet_v2":
        tv_name = "mobilenet_v2"
        kwargs["dropout"] = model.number("dropout", 0.2, 0.0, 1.0, high_open=True)
        kwargs["width_mult"] = model.number("width_mult", 1.0, 0.0, low_open=True)
    else:  # vit
        n_embd = model.integer("n_embd", 768)
        n_head = model.integer("n_head", 12)
        if n_embd % n_head:
            raise UsageError(f"{model.where('n_embd')}: {n_embd} is not divisible by "
                             f"model.n_head = {n_head}")
        patch = model.integer("patch_size", 16)
        if image_size % patch:
            raise UsageError(f"{model.where('image_size')}: {image_size} is not a multiple of "
                             f"model.patch_size = {patch}")
        n_inner = model.values.get("n_inner", 0)
        tv_name = "vit"
        kwargs.update(patch_size=patch, num_layers=model.integer("n_layer", 12),
                      num_heads=n_head, hidden_dim=n_embd,
                      mlp_dim=model.integer("n_inner", 0) if n_inner else 4 * n_embd,
                      dropout=model.number("dropout", 0.0, 0.0, 1.0, high_open=True))
    return StepSpec(family="torchvision", model=tv_name, image_size=image_size,
                    num_classes=num_classes, model_kwargs=tuple(sorted(kwargs.items())),
                    **common)


def _sequence_and_inner(model, default_len):
    """seq_len (checked against n_positions), n_positions and n_inner (0: 4 x n_embd)."""
    seq_len = model.integer("seq_len", default_len)
    n_positions = model.integer("n_positions", default_len)
    if seq_len > n_positions:
        raise UsageError(f"{model.where('seq_len')}: {seq_len} exceeds model.n_positions "
                         f"= {n_positions}")
    n_inner = model.values.get("n_inner", 0)
    if n_inner != 0:
        n_inner = model.integer("n_inner", 0)
    return seq_len, n_positions, n_inner


def _llama_config(model):
    n_embd = model.integer("n_embd", 4096)
    n_head = model.integer("n_head", 32)
    if n_embd % n_head:
        raise UsageError(f"{model.where('n_embd')}: {n_embd} is not divisible by "
                         f"model.n_head = {n_head}")
    n_kv_head = model.integer("n_kv_head", n_head)
    if n_head % n_kv_head:
        raise UsageError(f"{model.where('n_kv_head')}: model.n_head = {n_head} is not "
                         f"divisible by {n_kv_head}")
    if (n_embd // n_head) % 2:
        raise UsageError(f"{model.where('n_head')}: the head width n_embd / n_head = "
                         f"{n_embd // n_head} must be even for the rotary embedding")
    seq_len, n_positions, n_inner = _sequence_and_inner(model, 4096)
    return LlamaConfig(n_layer=model.integer("n_layer", 32), n_embd=n_embd, n_head=n_head,
                       n_kv_head=n_kv_head, n_inner=n_inner, seq_len=seq_len,
                       vocab=model.integer("vocab", 32000), n_positions=n_positions,
                       tie_embeddings=model.boolean("tie_embeddings", False),
                       attention=model.choice("attention", "sdpa", ATTENTIONS))
