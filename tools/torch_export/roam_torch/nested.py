"""Walking the nested arguments of an aten call (tuples, lists, dicts of values): the one
traversal the exporter (fx nodes an op reads) and the plan runner (real tensors an op reads,
factory devices to retarget) share."""

import torch
import torch.fx as fx


def is_fx_node(x):
    return isinstance(x, fx.Node)


def is_tensor(x):
    return isinstance(x, torch.Tensor)


def leaves(tree, predicate, unique=False):
    """The leaves of `tree` for which predicate holds, depth first in argument order; with
    unique, each object once (by identity)."""
    out, seen = [], set()

    def visit(a):
        if predicate(a):
            if unique:
                if id(a) in seen:
                    return
                seen.add(id(a))
            out.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x)
        elif isinstance(a, dict):
            for x in a.values():
                visit(x)

    visit(tree)
    return out


def map_leaves(tree, fn):
    """`tree` with every leaf x replaced by fn(x), containers rebuilt with their own types."""
    if isinstance(tree, (list, tuple)):
        return type(tree)(map_leaves(v, fn) for v in tree)
    if isinstance(tree, dict):
        return {k: map_leaves(v, fn) for k, v in tree.items()}
    return fn(tree)
