"""The model options export.py and run_plan.py share: what to build and trace, from the command
line (--model NAME or --config FILE, with --batch, --optimizer, ...)."""


def add_model_arguments(p):
    """Adds the model options to parser p; returns the required --model/--config group so a
    command can add its own alternatives (export.py's --list)."""
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", metavar="NAME",
                      help="a torchvision classification model, e.g. resnet18 (see --list)")
    what.add_argument("--config", metavar="CONFIG.yaml",
                      help="a roam YAML config (docs/configs.md): gpt2 traces the built-in "
                           "nanoGPT model, image families their torchvision model")
    p.add_argument("--batch", type=int, metavar="N",
                   help="batch size (default 32 for --model; overrides model.batch)")
    p.add_argument("--image-size", type=int, default=224, metavar="S",
                   help="input images are S x S (torchvision models; default 224)")
    p.add_argument("--num-classes", type=int, default=1000, metavar="C",
                   help="classifier outputs (torchvision models; default 1000)")
    p.add_argument("--optimizer", choices=("adam", "adamw", "sgd"),
                   help="optimizer, foreach=False (default adam; overrides training.optimizer)")
    p.add_argument("--dropout", choices=("cuda", "cpu"),
                   help="dropout as CUDA runs it (native_dropout, bool mask; the default) or as "
                        "CPU runs it (bernoulli_ on a float mask); overrides model.device")
    p.add_argument("--name", help="graph name (default: model and batch, or the config name)")
    return what


def check_model_arguments(p, args):
    """Parser-level checks of the model options (p.error exits with status 2)."""
    if args.config is not None and (args.image_size != 224 or args.num_classes != 1000):
        p.error("--image-size and --num-classes apply to --model only")


def spec_from_arguments(args):
    """The StepSpec the options describe; raises spec.UsageError on bad input."""
    from . import spec as specs

    if args.model is not None:
        return specs.torchvision_spec(
            args.model, batch=32 if args.batch is None else args.batch,
            image_size=args.image_size, optimizer=args.optimizer or "adam",
            num_classes=args.num_classes, dropout_form=args.dropout or "cuda", name=args.name)
    return specs.load_config(args.config, batch=args.batch, optimizer=args.optimizer,
                             dropout_form=args.dropout, name=args.name)
