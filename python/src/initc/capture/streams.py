"""Random streams: which random ops of a parameter share values, and which are independent."""

import torch

from .diagnostics import CaptureError
from .emission import module_path
from .expressions import random_leaves


# The most elements whose positions assign_streams compares (int64 index tensors: 512 MiB).
MAX_CHECKED_ELEMENTS = 1 << 26


def read_key(n):
    return (n.seq, n.imap.key if n.imap is not None else None)


def assign_streams(name, final, roots):
    """The stream of every random op in a parameter's body (the final value and the dead ones in
    `roots`): random ops read in the same way (the same random tensor at the same positions) get
    one stream, so they have the same values (a[:, :16] - a[:, :16] is 0), others get their own
    stream, numbered in program order. The final value must read each element of a random
    tensor at most once (one position, or one way): otherwise PyTorch's copies (a + a.t(),
    w[:, 8:] = -w[:, :8], an expand) would be independent draws here, so the capture stops."""
    by_seq = {}
    for n in random_leaves(final):
        by_seq.setdefault(n.seq, {}).setdefault(read_key(n), n)
    group = {}  # read key -> the read key whose stream it shares
    for seq, reads in by_seq.items():
        if len(reads) == 1:
            (key, n), = reads.items()
            if n.imap is None or n.imap.injective:
                group[key] = key
                continue
        total = sum(n.numel() for n in reads.values())
        origin = next(iter(reads.values())).origin
        if total > MAX_CHECKED_ELEMENTS:
            raise CaptureError("%s: %s reads the random tensor drawn at %s through views of %d "
                               "elements in all, too many to check that they are exact (at most "
                               "%d)" % (module_path(name), name, origin, total,
                                        MAX_CHECKED_ELEMENTS))
        distinct = []
        for key, n in reads.items():
            positions = torch.arange(n.numel()) if n.imap is None else n.imap.indices()
            same = next((k for k, p in distinct if torch.equal(p, positions)), None)
            group[key] = key if same is None else same
            if same is None:
                distinct.append((key, positions))
        used = torch.cat([p[p >= 0] for _, p in distinct])
        if torch.unique(used).numel() != used.numel():
            reads_at = sorted({n.where for n in reads.values() if n.imap is not None})
            raise CaptureError(
                "%s: %s holds some elements of the random tensor drawn at %s more than once (read "
                "at %s): in PyTorch those are exact copies (as in a + a.t(), w[:, 8:] = "
                "-w[:, :8], expand), but init IR draws every element of a random op at its own "
                "index and cannot repeat it at another; draw separate random tensors if "
                "independent values are meant, or build the relationship after loading the "
                "checkpoint" % (module_path(name), name, origin, ", ".join(reads_at) or origin))
    def groups(nodes):
        out = []
        for n in nodes:
            g = group.get(read_key(n), read_key(n))
            if g not in out:
                out.append(g)
        return sorted(out, key=lambda g: g[0])  # stable: program order, then first use
    # The final value's random ops first: its streams are the same whether or not the dead
    # values before it are printed (a constructor's init that _init_weights redraws).
    order = groups(random_leaves(final))
    order += [g for g in groups(n for r in roots for n in random_leaves(r)) if g not in order]
    stream = {g: i for i, g in enumerate(order)}
    return {id(n): stream[group.get(read_key(n), read_key(n))]
            for r in roots for n in random_leaves(r)}


def reads_overlap(reads):
    """Whether parameters read common elements of one random tensor: reads maps each parameter
    name to its reads {read key: node}. Disjoint parts (a[:32] and a[32:] in two parameters) are
    independent in PyTorch too."""
    nodes = [n for r in reads.values() for n in r.values()]
    if any(n.imap is None for n in nodes) or \
            sum(n.numel() for n in nodes) > MAX_CHECKED_ELEMENTS:
        return True
    used = torch.cat([torch.unique(torch.cat([n.imap.indices() for n in r.values()]))
                      for r in reads.values()])
    used = used[used >= 0]
    return torch.unique(used).numel() != used.numel()
