"""initc in the training process against each framework's own initialization, on one llama-style
HF config, in one run on the same CPU (see python_init.sh, which runs it in the pinned venv):

  torch: a transformers LlamaForCausalLM built on the meta device and sharded with FSDP2
         (fully_shard per decoder layer and at the root) on a gloo mesh, then either
         to_empty + the model's own init_weights() (transformers' _init_weights: normal_ for
         Linear and Embedding, ones for RMSNorm), or initc.torch.init_ (to_empty, then each local
         shard filled by the runtime);
  jax:   the same parameters as jax.Arrays on a mesh of every local device (FSDP-like: dim 0
         sharded where it divides), either by jax.jit(init, out_shardings=...) of an init
         function drawing the same distributions (its trace and compile included, as a user pays
         them), or by initc.jax.init.

Both sides of each pair make the same bytes into fresh memory; each time is the best of --runs
runs. Nothing here passes or fails on a time. Under torchrun the torch part runs on every process
(the world's mesh); alone it is a world of one process with a one-device mesh.

  python_init.py --initc build/bin/initc [--config C] [--dtype bf16|f32] [--part torch|jax|both]
                 [--runs N] [--threads N] [--work DIR]
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--initc", required=True, help="the initc compiler (build/bin/initc)")
    parser.add_argument("--config", default=os.path.join(HERE, "configs", "tinyllama-1.1b.json"))
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    parser.add_argument("--part", default="both", choices=["torch", "jax", "both"])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for torch and initc (default: the CPUs this process may "
                             "run on, divided among the processes of a torchrun)")
    parser.add_argument("--work", help="directory for the IR and program (default: a new one)")
    return parser.parse_args()


def best(runs, body):
    """The smallest of `runs` wall times of body(), each after a collection."""
    times = []
    for _ in range(max(runs, 1)):
        gc.collect()
        start = time.perf_counter()
        body()
        times.append(time.perf_counter() - start)
    return min(times)


def row(name, seconds, nbytes, ratio=None):
    tail = "" if ratio is None else "%9.1fx" % ratio
    print("%-56s %9.3f %9.3f %s" % (name, seconds, nbytes / seconds / 1e9, tail), flush=True)


def torch_part(args, model_ir, config, threads):
    import torch
    import torch.distributed as dist
    import transformers
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    import initc
    import initc.torch

    torch.set_num_threads(threads)
    if "RANK" in os.environ:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    hf_config = transformers.LlamaConfig(**config)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32

    def sharded_meta_model():
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM._from_config(hf_config, dtype=dtype)
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model

    def local_bytes(model):
        return sum(t.to_local().numel() * t.element_size() if hasattr(t, "to_local")
                   else t.numel() * t.element_size() for t in model.state_dict().values())

    prog = initc.load(model_ir[1])

    def own_init():
        model = sharded_meta_model()
        model.to_empty(device="cpu")
        for module in model.modules():  # nothing counts as initialized yet
            module.__dict__.pop("_is_hf_initialized", None)
        model.init_weights()
        own_init.bytes = local_bytes(model)
        own_init.std = float(model.model.layers[0].mlp.up_proj.weight.detach().to_local().float().std())

    def initc_init():
        model = sharded_meta_model()
        initc.torch.init_(model, prog, threads=threads)
        initc_init.bytes = local_bytes(model)
        initc_init.std = float(model.model.layers[0].mlp.up_proj.weight.detach().to_local().float().std())

    own_s = best(args.runs, own_init)
    initc_s = best(args.runs, initc_init)
    dist.barrier()
    if rank == 0:
        print("torch: FSDP2 on a %d-process gloo mesh, %d thread(s) per process, %s bytes per "
              "process; std of one weight %.4f (own) %.4f (initc)"
              % (world, threads, own_init.bytes, own_init.std, initc_init.std))
        row("  meta, to_empty, init_weights() (transformers)", own_s, own_init.bytes)
        row("  initc.torch.init_ (initc is Nx faster)", initc_s, initc_init.bytes,
            own_s / initc_s)
    prog.close()
    dist.destroy_process_group()


def jax_part(args, model_ir, config):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    import initc
    import initc.jax

    prog = initc.load(model_ir[1])
    devices = jax.devices()
    mesh = jax.make_mesh((len(devices),), ("dp",))
    params = [p for p in prog.params(0) if p.persistent]
    std = float(config.get("initializer_range", 0.02))
    dtype = jnp.bfloat16 if args.dtype == "bf16" else jnp.float32

    def spec(shape):
        return P("dp") if shape and shape[0] % len(devices) == 0 else P()

    shardings = {p.name: NamedSharding(mesh, spec(p.global_shape)) for p in params}
    nbytes = sum(p.bytes for p in params)

    def init(key):
        # The distributions transformers' _init_weights draws: normal(0, std) for Linear and
        # Embedding weights (the padding row zero), ones for the norms.
        out = {}
        keys = jax.random.split(key, len(params))
        for k, p in zip(keys, params):
            if p.name.endswith("norm.weight"):
                out[p.name] = jnp.ones(p.global_shape, dtype)
            else:
                value = (jax.random.normal(k, p.global_shape, jnp.float32) * std).astype(dtype)
                if p.name.endswith("embed_tokens.weight") and config.get("pad_token_id") is not None:
                    value = value.at[config["pad_token_id"]].set(0)
                out[p.name] = value
        return out

    def jit_init():
        # A new jit each run: its trace and compile are what a user pays once per model.
        arrays = jax.jit(init, out_shardings=shardings)(jax.random.key(0))
        jax.block_until_ready(arrays)

    def initc_init():
        arrays = initc.jax.init(prog, shardings)
        jax.block_until_ready(arrays)
        initc_init.std = float(np.asarray(arrays[params[-1].name][:64].astype(jnp.float32)).std())

    jit_s = best(args.runs, jit_init)
    initc_s = best(args.runs, initc_init)
    print("jax: %d device(s) (%s), %d bytes" % (len(devices), devices[0].platform, nbytes))
    row("  jax.jit(init, out_shardings=...), compile included", jit_s, nbytes)
    row("  initc.jax.init (initc is Nx faster)", initc_s, nbytes, jit_s / initc_s)
    prog.close()


def main():
    args = parse_args()
    config = json.load(open(args.config))
    if "RANK" in os.environ and not args.work:
        sys.exit("python_init.py: under torchrun, --work must name a directory every process sees")
    work = args.work or tempfile.mkdtemp(prefix="initc-python-init-")
    os.makedirs(work, exist_ok=True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    threads = args.threads or max(1, len(os.sched_getaffinity(0)) // world)
    model = os.path.join(work, "model.mlir")
    prog = os.path.join(work, "prog")
    # The other processes of a torchrun wait for rank 0's program (a name of this run's own).
    ready = os.path.join(work, "ready-" + os.environ.get("TORCHELASTIC_RUN_ID", "alone"))
    if int(os.environ.get("RANK", "0")) == 0:
        start = time.perf_counter()
        subprocess.run([args.initc, "import", "hf", args.config, "--dtype", args.dtype,
                        "-o", model], check=True)
        import_s = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([args.initc, "compile", model, "-o", prog], check=True,
                       stdout=subprocess.DEVNULL)
        print("%s %s: initc import hf %.2f s, initc compile %.2f s (once per model, ahead of "
              "time; not in the times below)" % (os.path.basename(args.config), args.dtype,
                                                  import_s, time.perf_counter() - start))
        print("%-56s %9s %9s %s" % ("run (best of %d)" % args.runs, "seconds", "GB/s", "ratio"))
        open(ready, "w").close()
    else:
        while not os.path.exists(ready):
            time.sleep(0.1)
    if args.part in ("torch", "both"):
        torch_part(args, (model, prog), config, threads)
    if args.part in ("jax", "both") and int(os.environ.get("RANK", "0")) == 0:
        jax_part(args, (model, prog), config)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
