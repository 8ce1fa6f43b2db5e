"""What to trace: the model, the batch and the optimizer, from command-line options or from a
roam YAML config (the keys docs/configs.md documents for the C++ generator).

Every problem with the request raises UsageError, whose message names the file and the field;
the command line turns it into exit status 2.
"""

import difflib
import math
from pathlib import Path
from dataclasses import dataclass, field, replace

import torch

from .gpt2 import GPT2Config


class UsageError(Exception):
    """Bad user input: an unknown model or option, or a malformed config."""


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
OPTIMIZERS = ("adam", "adamw", "sgd")
DROPOUT_FORMS = ("cuda", "cpu")


@dataclass(frozen=True)
class OptimizerSpec:
    name: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.0  # sgd only
    weight_decay: float = 0.0  # adamw applies it decoupled; adam and sgd add it to the gradient
    # Adam/AdamW: the value of state["step"] before the traced step. The step counters are host
    # tensors; their value only changes the bias-correction scalars baked into the trace.
    step: int = 1


@dataclass(frozen=True)
class StepSpec:
    name: str
    family: str  # "gpt2" or "torchvision"
    model: str = ""  # torchvision model name
    gpt2: GPT2Config = field(default_factory=GPT2Config)
    batch: int = 32
    image_size: int = 224
    num_classes: int = 1000
    dtype: str = "float32"
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)
    dropout_form: str = "cuda"

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


# The config keys this tool reads (a subset of docs/configs.md: only the GPT-2 family).
_MODEL_KEYS = ("family", "n_layer", "n_embd", "n_head", "seq_len", "vocab", "batch",
               "dropout", "dtype")
_TRAINING_KEYS = ("optimizer", "lr", "momentum", "weight_decay")


def load_config(path, batch=None, optimizer=None, dropout_form="cuda", name=None):
    """Reads a roam YAML config describing a GPT-2; batch/optimizer override the file."""
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

    def section(key, allowed):
        value = doc.get(key, {})
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise UsageError(f"{path}: {key}: expected a mapping")
        for k in value:
            if k not in allowed:
                raise UsageError(f"{path}: {key}.{k}: unknown key{_suggest(str(k), allowed)}")
        return value

    if "model" not in doc:
        raise UsageError(f"{path}: model: missing section")
    model = section("model", _MODEL_KEYS)
    training = section("training", _TRAINING_KEYS)

    family = model.get("family")
    if family is None:
        raise UsageError(f"{path}: model.family: missing")
    if family != "gpt2":
        raise UsageError(f"{path}: model.family: '{family}' is not traced from configs; only "
                         "gpt2 is (use --model NAME for torchvision models)")

    defaults = GPT2Config()

    def integer(key, default):
        value = model.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise UsageError(f"{path}: model.{key}: must be a positive integer, got {value!r}")
        return value

    def number(sec, key, default, low, high, high_open=False):
        value = sec.get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                math.isfinite(value) and low <= value and (value < high if high_open
                                                           else value <= high)):
            bound = f"[{low}, {high})" if high_open else f"[{low}, {high}]"
            raise UsageError(f"{path}: {'model' if sec is model else 'training'}.{key}: must "
                             f"be a number in {bound}, got {value!r}")
        return float(value)

    gpt2 = GPT2Config(n_layer=integer("n_layer", defaults.n_layer),
                      n_embd=integer("n_embd", defaults.n_embd),
                      n_head=integer("n_head", defaults.n_head),
                      seq_len=integer("seq_len", defaults.seq_len),
                      vocab=integer("vocab", defaults.vocab),
                      dropout=number(model, "dropout", defaults.dropout, 0.0, 1.0, True))
    if gpt2.n_embd % gpt2.n_head != 0:
        raise UsageError(f"{path}: model.n_embd: {gpt2.n_embd} is not divisible by "
                         f"model.n_head = {gpt2.n_head}")
    file_batch = integer("batch", 1)
    dtype = model.get("dtype", "float32")
    if dtype not in DTYPES:
        raise UsageError(f"{path}: model.dtype: must be one of {', '.join(DTYPES)}, got "
                         f"{dtype!r}{_suggest(str(dtype), DTYPES)}")
    opt_name = training.get("optimizer", "adam")
    if opt_name not in OPTIMIZERS:
        raise UsageError(f"{path}: training.optimizer: must be one of {', '.join(OPTIMIZERS)}, "
                         f"got {opt_name!r}{_suggest(str(opt_name), OPTIMIZERS)}")
    opt = OptimizerSpec(name=opt_name,
                        lr=number(training, "lr", OptimizerSpec.lr, 0.0, math.inf),
                        momentum=number(training, "momentum", 0.0, 0.0, 1.0),
                        weight_decay=number(training, "weight_decay", 0.0, 0.0, math.inf))

    if batch is not None:
        _check_positive("--batch", batch)
        file_batch = batch
    if optimizer is not None:
        _check_choice("--optimizer", optimizer, OPTIMIZERS)
        opt = replace(opt, name=optimizer)
    _check_choice("--dropout", dropout_form, DROPOUT_FORMS)
    return StepSpec(name=name or Path(path).stem, family="gpt2", gpt2=gpt2, batch=file_batch,
                    dtype=dtype, optimizer=opt, dropout_form=dropout_form)
