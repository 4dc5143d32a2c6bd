"""Filling a PyTorch module's parameters in the training process itself, however they are sharded:

    import initc.torch
    model = LlamaForCausalLM(config)            # built on the meta device
    fully_shard(model)                           # or parallelize_module, or both, or nothing
    initc.torch.init_(model, "prog/")            # every rank fills its own local shards

A DTensor (FSDP2, tensor parallel) gets exactly the elements its local tensor holds, located by
DTensor's own sharding functions; a plain tensor is filled whole. The values are those prog/init
writes, whatever mesh the program was compiled for. Needs torch (2.4 or later for DTensor)."""

import math
import warnings

import torch

from ._errors import Error
from ._program import Program, load

# safetensors' dtype names (initrt.h) -> torch's.
_TORCH_DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
                 "BF16": torch.bfloat16, "BOOL": torch.bool, "I64": torch.int64}


def _dtensor_type():
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch without distributed, or before 2.4
        return None
    return DTensor


def _runs(indices):
    """[(local start, global start, length)] of the maximal runs of consecutive indices."""
    runs = []
    for local, g in enumerate(indices):
        if runs and runs[-1][1] + runs[-1][2] == g:
            runs[-1][2] += 1
        else:
            runs.append([local, g, 1])
    return runs


def _local_boxes(name, tensor):
    """The boxes of a DTensor's local tensor in the global one: [(local offset, global offset,
    shape)]. One box for Shard and Replicate placements (compute_local_shape_and_global_offset);
    several when a _StridedShard (FSDP over a dim tensor parallelism shards too) interleaves."""
    from torch.distributed.tensor import Partial
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    try:
        from torch.distributed.tensor.placement_types import _StridedShard
    except ImportError:
        _StridedShard = ()
    placements = tuple(tensor.placements)
    if any(isinstance(p, Partial) for p in placements):
        raise ValueError("%s: a DTensor with Partial placements %s holds a part of a sum, "
                         "not elements of the tensor: redistribute it to Shard or Replicate "
                         "first" % (name, placements))
    mesh = tensor.device_mesh
    if not _StridedShard or not any(isinstance(p, _StridedShard) for p in placements):
        shape, offset = compute_local_shape_and_global_offset(tensor.shape, mesh, placements)
        return [((0,) * len(shape), tuple(offset), tuple(shape))]
    # The global indices of each dim, sharded left to right by the placements' own functions,
    # exactly as compute_local_shape_and_global_offset does before it keeps only the first.
    coordinate = mesh.get_coordinate()
    indices = [list(range(n)) for n in tensor.shape]
    for mesh_dim, placement in enumerate(placements):
        if placement.is_replicate():
            continue
        current = indices[placement.dim]
        kwargs = {"curr_local_size": len(current), "num_chunks": mesh.size(mesh_dim),
                  "rank": coordinate[mesh_dim]}
        if isinstance(placement, _StridedShard):
            kwargs["return_first_offset"] = False
        size, offsets = placement._local_shard_size_and_offset(**kwargs)
        chosen = range(offsets, offsets + size) if isinstance(offsets, int) else offsets[:size]
        indices[placement.dim] = [current[i] for i in chosen]
    boxes = [((), (), ())]
    for dim_indices in indices:
        boxes = [(lo + (r[0],), go + (r[1],), sh + (r[2],))
                 for lo, go, sh in boxes for r in _runs(dim_indices)]
    return boxes


def _retie(module, holders):
    """Points every (submodule, attribute) of a group at the group's first parameter again:
    to_empty converts a parameter shared by two modules once per module."""
    for group in holders:
        first_module, first_name = group[0]
        shared = first_module._parameters[first_name]
        for owner, name in group[1:]:
            owner._parameters[name] = shared


def _materialize(module):
    """Gives a module built on the meta device CPU storage (to_empty), keeping tied parameters
    tied."""
    tensors = list(module.parameters()) + list(module.buffers())
    if not any(t.is_meta for t in tensors):
        return
    groups = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        prefix, _, attr = name.rpartition(".")
        groups.setdefault(id(param), []).append((module.get_submodule(prefix), attr))
    module.to_empty(device=torch.device("cpu"))
    _retie(module, [g for g in groups.values() if len(g) > 1])


# The module torch's activation checkpointing wraps a block in (checkpoint_wrapper, which
# torchtitan's trainer applies by default): its state_dict hook drops it from the names.
_CHECKPOINT_WRAPPED = "_checkpoint_wrapped_module."


def _state_dict_name(name):
    return name.replace(_CHECKPOINT_WRAPPED, "")


def _entries(module):
    """(state-dict name, tensor, persistent) of every parameter and buffer, tied ones under each
    of their names."""
    persistent = set(module.state_dict(keep_vars=True).keys())
    entries = [(_state_dict_name(name), p, True)
               for name, p in module.named_parameters(remove_duplicate=False)]
    entries += [(_state_dict_name(name), b, _state_dict_name(name) in persistent)
                for name, b in module.named_buffers(remove_duplicate=False)]
    return entries


def init_(module, prog, names=None, threads=0):
    """Fills every parameter and persistent buffer of `module` (state-dict names; `names` maps
    a module name to the program's name where they differ) with the program's values, in place;
    non-persistent buffers too when the program has them. `prog` is an initc.Program or a
    program directory. A module on the meta device is given CPU storage first (to_empty); its
    non-persistent buffers the program lacks then hold uninitialized memory (a warning names
    them). A DTensor fills its local tensor only; tied parameters are filled once. Nothing is
    written unless every tensor matches: an unknown name is a KeyError, a shape a ValueError, a
    dtype a TypeError, two tensors under one program name, placements that do not fit the local
    tensor or a tensor off the CPU a ValueError, a base checkpoint (init.load) that cannot be
    read an initc.Error saying none was filled (or, when it failed while filling, that some may
    be). Every box is filled in one run of the runtime's threads. threads <= 0: one per CPU
    this process may run on (processes sharing a host's CPUs should divide them). Returns the
    module."""
    names = dict(names or {})
    owned = not isinstance(prog, Program)
    program = load(prog) if owned else prog
    try:
        params = program.params(0)
        entries = _entries(module)
        unknown_names = set(names) - {name for name, _, _ in entries}
        if unknown_names:
            raise KeyError("names maps %s, which the module does not have"
                           % ", ".join(sorted(unknown_names)))
        DTensor = _dtensor_type()
        plan = []          # (program name, tensor)
        unfilled = []      # meta buffers no checkpoint stores and the program lacks
        claimed = {}       # program parameter -> (module name, tensor)
        for name, tensor, persistent in entries:
            ir_name = names.get(name, name)
            index = program._native.param_index(ir_name)
            if index < 0:
                if not persistent:
                    # A buffer no checkpoint stores, which the program need not have.
                    if tensor.is_meta:
                        unfilled.append(name)
                    continue
                raise KeyError("the program has no parameter %r for the module's %r%s"
                               % (ir_name, name, "" if ir_name == name else
                                  " (mapped by names)"))
            param = params[index]
            if tuple(tensor.shape) != tuple(param.global_shape):
                raise ValueError("%s: the module's tensor has shape %s, the program's %s %s"
                                 % (name, list(tensor.shape), param.name,
                                    list(param.global_shape)))
            if tensor.dtype != _TORCH_DTYPES[param.dtype]:
                raise TypeError("%s: the module's tensor is %s, the program's %s is %s (%s)"
                                % (name, tensor.dtype, param.name, param.dtype,
                                   _TORCH_DTYPES[param.dtype]))
            previous = claimed.get(param.name)
            if previous is not None:
                if previous[1] is tensor:
                    continue  # tied: one tensor under two names, filled once
                raise ValueError("%s and %s are two tensors but both map to the program's %s"
                                 % (previous[0], name, param.name))
            claimed[param.name] = (name, tensor)
            plan.append((param.name, tensor))
        if any(t.is_meta for _, t in plan) or unfilled:
            _materialize(module)
            # to_empty made new tensors: look them up again under the same names.
            current = {name: t for name, t, _ in _entries(module)}
            plan = [(ir, current[claimed[ir][0]]) for ir, _ in plan]
        if unfilled:
            warnings.warn("initc.torch.init_: the program has no value for the module's "
                          "non-persistent buffers %s: after to_empty they hold uninitialized "
                          "memory; set them before use" % ", ".join(unfilled), stacklevel=2)
        with torch.no_grad():
            located = [(ir_name, *_locate(ir_name, tensor, DTensor)) for ir_name, tensor in plan]
            boxes = []
            for ir_name, local, local_boxes in located:
                for local_offset, global_offset, shape in local_boxes:
                    view = local
                    for d, (start, length) in enumerate(zip(local_offset, shape)):
                        view = view.narrow(d, start, length)
                    boxes.append((ir_name, global_offset, view))
            # One run for every box: the runtime checks them all (an unreadable base checkpoint
            # included) before it writes any.
            try:
                program.fill_boxes(boxes, threads)
            except Error as e:
                written = "none" if _refused(e) else "some, maybe"
                raise Error("%s (%s of the module's %d tensors were filled)"
                            % (e, written, len(plan)), e.status) from e
    finally:
        if owned:
            program.close()
    return module


def _refused(error):
    """Whether a fill_boxes failure was a refusal before anything was written: the runtime's
    refusals name the box (initrt_fill_boxes in initrt.h), a failure while filling does not."""
    return str(error).startswith("initrt_fill_boxes: boxes[")


def _fill_box_layout(tensor):
    """Whether initrt_fill_box writes `tensor` in place, checked before anything is written:
    dims in row-major order without overlap, the innermost contiguous (a dim of size 1 may have
    any stride, as there)."""
    n, shape = tensor.dim(), tuple(tensor.shape)
    if tensor.numel() == 0:
        return True
    stride = [0] * n
    for d in reversed(range(n)):
        contiguous = stride[d + 1] * shape[d + 1] if d + 1 < n else 1
        stride[d] = tensor.stride(d) if shape[d] > 1 else contiguous
        if stride[d] < contiguous or (d + 1 == n and stride[d] != 1):
            return False
    return True


def _locate(ir_name, tensor, DTensor):
    """(the tensor to write, [(local offset, global offset, shape)] of its boxes)."""
    if DTensor is not None and isinstance(tensor, DTensor):
        local = tensor.to_local()
        boxes = _local_boxes(ir_name, tensor)
        covered = sum(math.prod(shape) for _, _, shape in boxes)
        if covered != local.numel():
            raise ValueError("%s: the DTensor's local tensor has shape %s, but its placements "
                             "%s locate %d elements" % (ir_name, list(local.shape),
                                                        tuple(tensor.placements), covered))
    else:
        local, boxes = tensor, [((0,) * tensor.dim(), (0,) * tensor.dim(), tuple(tensor.shape))]
    if local.device.type != "cpu":
        raise ValueError("%s is on %s: initc fills CPU memory (fill a CPU tensor and copy it)"
                         % (ir_name, local.device))
    if not _fill_box_layout(local):
        raise ValueError("%s: the local tensor's strides %s (shape %s) are not row-major with a "
                         "contiguous innermost dim, as initc writes: give it a contiguous tensor "
                         "(e.g. .contiguous()) or fill one and copy"
                         % (ir_name, list(local.stride()), list(local.shape)))
    return local.detach(), boxes


__all__ = ["init_"]
