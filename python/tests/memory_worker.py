"""The peak memory of one process's fill, for test_memory.py: the program is opened first, the
kernel's peak-RSS mark reset (/proc/self/clear_refs, 5), then the fill runs; the line printed
gives the rise of the peak over the resident set before it and the bytes of the process's shards.

  torchrun ... memory_worker.py torch PROG CONFIG   FSDP2 (gloo) llama, initc.torch.init_
  python memory_worker.py jax PROG DEVICES          initc.jax.init over a mesh of DEVICES host
                                                    devices, dim 0 sharded where it divides
"""

import os
import re
import sys


def status_bytes(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\s+(\d+) kB", f.read()).group(1)) * 1024


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_bytes("VmRSS")


def torch_fill(prog_dir, config_path):
    import torch
    import torch.distributed as dist
    import transformers
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    import initc
    import initc.torch

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    config = transformers.LlamaConfig.from_json_file(config_path)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    prog = initc.load(prog_dir)
    before = reset_peak()
    initc.torch.init_(model, prog, threads=1)
    rise = status_bytes("VmHWM") - before
    tensors = list(model.parameters()) + list(model.buffers())
    shards = sum(t.to_local().numel() * t.element_size() if hasattr(t, "to_local")
                 else t.numel() * t.element_size() for t in tensors)
    largest = max(t.to_local().numel() * t.element_size() if hasattr(t, "to_local")
                  else t.numel() * t.element_size() for t in tensors)
    print("rank %d: peak rise %d bytes, shards %d bytes, largest %d bytes"
          % (rank, rise, shards, largest), flush=True)
    dist.barrier()
    # As torch_dist_worker.py: no interpreter teardown, where gloo's threads may abort.
    os._exit(0)


def jax_fill(prog_dir, devices):
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=%d" % devices
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    import initc
    import initc.jax

    mesh = jax.make_mesh((devices,), ("dp",))
    prog = initc.load(prog_dir)
    params = [p for p in prog.params(0) if p.persistent]
    shardings = {p.name: NamedSharding(mesh, P("dp") if p.global_shape[0] % devices == 0
                                       else P()) for p in params}
    jax.block_until_ready(jax.numpy.zeros(1))  # the client and its threads, before the mark
    before = reset_peak()
    arrays = initc.jax.init(prog, shardings, threads=1)
    jax.block_until_ready(arrays)
    rise = status_bytes("VmHWM") - before
    local = [sum(s.data.nbytes for s in a.addressable_shards) for a in arrays.values()]
    print("jax: peak rise %d bytes, shards %d bytes, largest %d bytes"
          % (rise, sum(local), max(local)), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        torch_fill(sys.argv[2], sys.argv[3])
    else:
        jax_fill(sys.argv[2], int(sys.argv[3]))
