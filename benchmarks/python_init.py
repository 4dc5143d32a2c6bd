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

Both sides of each pair make the same bytes into fresh memory. The torch times start from the
same sharded meta model (building it and fully_shard, which both sides need first, are timed
once and printed apart); the torch pair is then run again into memory already resident (to_empty
and every local tensor written once before the clock starts), which shows the computation alone.
Each time is the best of --runs runs, the two sides alternated (which one goes first swaps every
round); every run is printed with the load average after it. Afterwards initc's tensors are
compared bitwise with the checkpoint the program's prog/init writes (--no-check skips it).
Nothing here passes or fails on a time. Under torchrun the torch part runs on every process (the
world's mesh); alone it is a world of one process with a one-device mesh.

  python_init.py --initc build/bin/initc [--config C] [--dtype bf16|f32] [--part torch|jax|both]
                 [--runs N] [--threads N] [--work DIR] [--no-check]
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

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
    parser.add_argument("--work", help="directory for the IR, program and checkpoint (default: "
                                       "a new one)")
    parser.add_argument("--no-check", dest="check", action="store_false",
                        help="skip checking initc's tensors bitwise against prog/init's checkpoint")
    return parser.parse_args()


def load_average():
    return os.getloadavg()[0]


def alternate(runs, sides):
    """Runs each (name, prepare, body) of `sides` `runs` times, alternating them and swapping
    which goes first every round, so that both meet the same load. prepare() is untimed and
    returns body's argument. {name: (best seconds, [(seconds, load average), ...])}."""
    times = {name: [] for name, _, _ in sides}
    for round_ in range(max(runs, 1)):
        for name, prepare, body in (sides if round_ % 2 == 0 else sides[::-1]):
            argument = prepare()
            gc.collect()
            start = time.perf_counter()
            body(argument)
            times[name].append((time.perf_counter() - start, load_average()))
            del argument
            gc.collect()
    return {name: (min(t for t, _ in runs_), runs_) for name, runs_ in times.items()}


def row(name, measured, nbytes, ratio=None):
    seconds, runs = measured
    tail = "" if ratio is None else "%9.1fx" % ratio
    print("%-56s %9.3f %9.3f %9s   all: %s" % (
        name, seconds, nbytes / seconds / 1e9, tail,
        ", ".join("%.2f s (load %.1f)" % run for run in runs)), flush=True)


def torch_part(args, model_ir, config, threads):
    import torch
    import torch.distributed as dist
    import transformers
    from safetensors import safe_open
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

    def local(tensor):
        return tensor.to_local() if hasattr(tensor, "to_local") else tensor

    def local_bytes(model):
        return sum(local(t).numel() * local(t).element_size() for t in model.state_dict().values())

    def resident_model():
        # to_empty, then every local tensor written once: its pages are resident, so the timed
        # init that follows pays no first touch of fresh memory, on either side.
        model = sharded_meta_model()
        model.to_empty(device="cpu")
        with torch.no_grad():
            for tensor in model.state_dict().values():
                local(tensor).zero_()
        return model

    prog = initc.load(model_ir[1])

    def own_init(model):
        if any(p.is_meta for p in model.parameters()):
            model.to_empty(device="cpu")
        for module in model.modules():  # nothing counts as initialized yet
            module.__dict__.pop("_is_hf_initialized", None)
        model.init_weights()
        own_init.bytes = local_bytes(model)
        own_init.std = float(local(model.model.layers[0].mlp.up_proj.weight).detach().float().std())

    def initc_init(model):
        with warnings.catch_warnings():  # HF's rotary original_inv_freq: no checkpoint has it
            warnings.simplefilter("ignore")
            initc.torch.init_(model, prog, threads=threads)
        initc_init.bytes = local_bytes(model)
        initc_init.std = float(local(model.model.layers[0].mlp.up_proj.weight).detach().float().std())
        initc_init.model = model

    start = time.perf_counter()
    sharded_meta_model()
    setup_s = time.perf_counter() - start
    fresh = alternate(args.runs, [("own", sharded_meta_model, own_init),
                                  ("initc", sharded_meta_model, initc_init)])
    checked = check_torch(initc_init.model, model_ir, args, safe_open, local) if args.check else None
    initc_init.model = None
    resident = alternate(args.runs, [("own", resident_model, own_init),
                                     ("initc", resident_model, initc_init)])
    initc_init.model = None
    dist.barrier()
    if rank == 0:
        print("torch: FSDP2 on a %d-process gloo mesh, %d thread(s) per process for torch and "
              "initc alike, %s bytes per process; std of one weight %.4f (own) %.4f (initc); "
              "building the meta model and fully_shard (before either side, not timed) %.2f s"
              % (world, threads, own_init.bytes, own_init.std, initc_init.std, setup_s))
        if checked is not None:
            print("  rank 0: %d local tensors (%d bytes) bitwise equal to prog/init's checkpoint"
                  % checked)
        row("  meta, to_empty, init_weights() (transformers)", fresh["own"], own_init.bytes)
        row("  meta, initc.torch.init_ (initc is Nx faster)", fresh["initc"], initc_init.bytes,
            fresh["own"][0] / fresh["initc"][0])
        row("  resident memory: init_weights()", resident["own"], own_init.bytes)
        row("  resident memory: initc.torch.init_", resident["initc"], initc_init.bytes,
            resident["own"][0] / resident["initc"][0])
    prog.close()
    dist.destroy_process_group()


def reference_checkpoint(args, model_ir):
    """The checkpoint the program's own prog/init writes (hf layout: one model.safetensors of
    whole tensors), made once by rank 0 and awaited by the others."""
    checkpoint = os.path.join(args.work, "checkpoint")
    ready = checkpoint + ".ready-" + os.environ.get("TORCHELASTIC_RUN_ID", "alone")
    if int(os.environ.get("RANK", "0")) == 0 and not os.path.exists(ready):
        subprocess.run([os.path.join(model_ir[1], "init"), "--out", checkpoint, "--quiet",
                        "--overwrite"], check=True)
        open(ready, "w").close()
    while not os.path.exists(ready):
        time.sleep(0.1)
    return checkpoint


def checkpoint_files(checkpoint):
    """{file: [tensor names]} of an hf-layout checkpoint, from its index."""
    index = json.load(open(os.path.join(checkpoint, "model.safetensors.index.json")))
    files = {}
    for name, file in index["weight_map"].items():
        files.setdefault(os.path.join(checkpoint, file), []).append(name)
    return files


def check_torch(model, model_ir, args, safe_open, local):
    """Every local tensor of `model` (this process's shards) against the same box of the
    checkpoint that the 1-device program's prog/init writes; AssertionError naming the first
    that differs. (tensors, bytes) checked."""
    import torch
    from initc.torch import _local_boxes

    checkpoint = reference_checkpoint(args, model_ir)
    tensors = nbytes = 0
    state = model.state_dict()
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    for file, names in checkpoint_files(checkpoint).items():
        with safe_open(file, framework="pt") as f:
            for name in names:
                tensor = state[name]
                mine = local(tensor).detach()
                boxes = (_local_boxes(name, tensor) if hasattr(tensor, "to_local")
                         else [((0,) * mine.dim(), (0,) * mine.dim(), tuple(mine.shape))])
                for local_offset, global_offset, shape in boxes:
                    part = f.get_slice(name)[tuple(slice(o, o + n)
                                                   for o, n in zip(global_offset, shape))]
                    view = mine[tuple(slice(o, o + n) for o, n in zip(local_offset, shape))]
                    if not torch.equal(view.contiguous().view(width[view.element_size()]),
                                       part.contiguous().view(width[part.element_size()])):
                        raise AssertionError("%s differs from prog/init's checkpoint" % name)
                tensors += 1
                nbytes += mine.numel() * mine.element_size()
    return tensors, nbytes


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

    def jit_init(_):
        # Its trace and compile are what a user pays once per model: every run starts with
        # JAX's caches emptied and a new function, so that no run reuses another's executable.
        jax.clear_caches()
        arrays = jax.jit(lambda key: init(key), out_shardings=shardings)(jax.random.key(0))
        jax.block_until_ready(arrays)

    def initc_init(_):
        arrays = initc.jax.init(prog, shardings, threads=args.threads)
        jax.block_until_ready(arrays)
        initc_init.std = float(np.asarray(arrays[params[-1].name][:64].astype(jnp.float32)).std())
        initc_init.arrays = arrays

    measured = alternate(args.runs, [("jit", lambda: None, jit_init),
                                     ("initc", lambda: None, initc_init)])
    checked = None
    if args.check:
        checked = check_jax(initc_init.arrays, reference_checkpoint(args, model_ir))
    initc_init.arrays = None
    print("jax: %d device(s) (%s), %d bytes; initc %d thread(s), XLA its own pool"
          % (len(devices), devices[0].platform, nbytes, args.threads or len(os.sched_getaffinity(0))))
    if checked is not None:
        print("  %d arrays (%d bytes of shards) bitwise equal to prog/init's checkpoint" % checked)
    row("  jax.jit(init, out_shardings=...), compile included", measured["jit"], nbytes)
    row("  initc.jax.init (initc is Nx faster)", measured["initc"], nbytes,
        measured["jit"][0] / measured["initc"][0])
    prog.close()


def check_jax(arrays, checkpoint):
    """Every addressable shard of `arrays` against the same box of the checkpoint; (arrays,
    bytes) checked."""
    import numpy as np
    from safetensors import safe_open

    count = nbytes = 0
    for file, names in checkpoint_files(checkpoint).items():
        with safe_open(file, framework="numpy") as f:
            for name in names:
                for shard in arrays[name].addressable_shards:
                    mine = np.asarray(shard.data)
                    if mine.tobytes() != f.get_slice(name)[shard.index].tobytes():
                        raise AssertionError("%s differs from prog/init's checkpoint" % name)
                    nbytes += mine.nbytes
                count += 1
    return count, nbytes


def main():
    args = parse_args()
    config = json.load(open(args.config))
    if "RANK" in os.environ and not args.work:
        sys.exit("python_init.py: under torchrun, --work must name a directory every process sees")
    work = args.work or tempfile.mkdtemp(prefix="initc-python-init-")
    os.makedirs(work, exist_ok=True)
    args.work = work
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
