"""One process of test_trainer_presets.py's Megatron job (torchrun, gloo, CPU): megatron-core's own
llama-style GPTModel (swiglu, RMSNorm, untied embeddings, rope, no biases) built on this rank's
pipeline stage and tensor-parallel rank by Megatron itself, checked against the rank's boxes in a
program compiled with `--shard megatron` and the rank's file that program wrote.

Megatron builds each weight on the CPU (use_cpu_initialization) by filling a whole master weight
with init_method and keeping its own part of it. Here init_method fills the master with its flat
element index, so every element of a local weight says which global element Megatron gave this
rank: that, not a rule restated here, gives the rows and columns each rank holds. The checks:
  - the layers this pipeline rank builds (layer_number) are the layers whose tensors our rank
    holds, and the embedding, final norm and output layer sit on the stages Megatron puts them;
  - every tensor's box (offset and shape in transformers' tensor) from Megatron's indices equals
    initc.load(prog).params(rank)'s box, name for name, and no other tensor is on the rank;
  - the rank's file, fused the way Megatron fuses a rank's tensors, is bit for bit Megatron's
    local weight of the reference tensors (the 1-rank program's file) at Megatron's indices;
  - Megatron's own forward code reads that fused weight as the name mapping says: its
    get_query_key_value_tensors gives the rank's q, k and v, its tensor-parallel MLP computes
    transformers' LlamaMLP (the indices alone cannot tell q from k, or gate from up);
  - Megatron's checkpoint metadata (sharded_state_dict: global layer, global offset) agrees.

Names (transformers' llama <- Megatron's GPTModel, local spec), layer l global, i local:
    model.embed_tokens.weight                     <- embedding.word_embeddings.weight
    model.layers.l.input_layernorm.weight         <- decoder.layers.i.input_layernorm.weight
    model.layers.l.self_attn.{q,k,v}_proj.weight  <- decoder.layers.i.self_attention.linear_qkv
        .weight: per query group g, q's rows of g's heads, then k's and v's rows of g
    model.layers.l.self_attn.o_proj.weight        <- decoder.layers.i.self_attention.linear_proj
        .weight
    model.layers.l.post_attention_layernorm.weight <- decoder.layers.i.pre_mlp_layernorm.weight
    model.layers.l.mlp.{gate,up}_proj.weight      <- decoder.layers.i.mlp.linear_fc1.weight:
        gate's rows, then up's (a rank holds its part of each: stride 2)
    model.layers.l.mlp.down_proj.weight           <- decoder.layers.i.mlp.linear_fc2.weight
    model.norm.weight                             <- decoder.final_layernorm.weight
    lm_head.weight                                <- output_layer.weight

    torchrun --nproc-per-node N megatron_worker.py PROG REFERENCE CKPT CONFIG MESH
    MESH: initc's mesh, e.g. pp=2,tp=2 (Megatron's rank order: tp fastest, then dp, then pp)"""

import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file

import initc
from torch_dist_worker import _bits, leave


def megatron_model(config, tp, pp):
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer import TransformerConfig

    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp)

    def element_index(master):
        # Exact in float32 while a weight has under 2**24 elements.
        assert master.numel() < 1 << 24, master.shape
        with torch.no_grad():
            master.copy_(torch.arange(master.numel(), dtype=torch.float32).view(master.shape))

    transformer = TransformerConfig(
        num_layers=config["num_hidden_layers"], hidden_size=config["hidden_size"],
        num_attention_heads=config["num_attention_heads"],
        num_query_groups=config["num_key_value_heads"], kv_channels=config["head_dim"],
        ffn_hidden_size=config["intermediate_size"], gated_linear_unit=True,
        activation_func=F.silu, normalization="RMSNorm", add_bias_linear=False,
        tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
        use_cpu_initialization=True, perform_initialization=True, params_dtype=torch.float32,
        pipeline_dtype=torch.float32, init_method=element_index,
        output_layer_init_method=element_index)
    model = GPTModel(
        transformer, get_gpt_layer_local_spec(normalization="RMSNorm"),
        vocab_size=config["vocab_size"], max_sequence_length=64,
        pre_process=parallel_state.is_pipeline_first_stage(),
        post_process=parallel_state.is_pipeline_last_stage(),
        share_embeddings_and_output_weights=False, position_embedding_type="rope")
    where = "pp %d, dp %d, tp %d" % (parallel_state.get_pipeline_model_parallel_rank(),
                                    parallel_state.get_data_parallel_rank(),
                                    parallel_state.get_tensor_model_parallel_rank())
    return model, where


def hf_rows(megatron_name, config, layer):
    """Megatron's whole (master) weight as transformers' tensors: for each of its rows, the
    transformers tensor and row it is, in Megatron's order."""
    prefix = "model.layers.%s." % layer
    if megatron_name.endswith("linear_qkv.weight"):
        groups, d = config["num_key_value_heads"], config["head_dim"]
        per_group = config["num_attention_heads"] // groups
        rows = []
        for g in range(groups):
            rows += [(prefix + "self_attn.q_proj.weight", g * per_group * d + r)
                     for r in range(per_group * d)]
            rows += [(prefix + "self_attn.k_proj.weight", g * d + r) for r in range(d)]
            rows += [(prefix + "self_attn.v_proj.weight", g * d + r) for r in range(d)]
        return rows
    if megatron_name.endswith("linear_fc1.weight"):
        n = config["intermediate_size"]
        return ([(prefix + "mlp.gate_proj.weight", r) for r in range(n)] +
                [(prefix + "mlp.up_proj.weight", r) for r in range(n)])
    whole = {"linear_proj.weight": prefix + "self_attn.o_proj.weight",
             "linear_fc2.weight": prefix + "mlp.down_proj.weight",
             "word_embeddings.weight": "model.embed_tokens.weight",
             "output_layer.weight": "lm_head.weight"}
    for suffix, name in whole.items():
        if megatron_name.endswith(suffix):
            return None, name
    raise AssertionError("no transformers name for Megatron's %s" % megatron_name)


NORMS = {"input_layernorm.weight": "input_layernorm.weight",
         "pre_mlp_layernorm.weight": "post_attention_layernorm.weight"}


def megatron_boxes(model, config, shapes):
    """{transformers name: (offset, shape)} of what Megatron put on this rank, the global layers
    it built, and for each Megatron weight (its local element indices, its transformers rows,
    its master's column count) to check bytes with. shapes: transformers' global shapes."""
    layers = {i: block.layer_number - 1  # Megatron counts layers from 1
              for i, block in enumerate(model.decoder.layers)}
    boxes, weights = {}, []
    for name, param in model.named_parameters():
        local = param.detach()
        layer = layers[int(name.split(".")[2])] if name.startswith("decoder.layers.") else None
        if local.dim() == 1:  # a norm: whole on every tensor-parallel rank
            if name == "decoder.final_layernorm.weight":
                hf = "model.norm.weight"
            else:
                hf = "model.layers.%d.%s" % (layer, NORMS[name.split(".", 3)[3]])
            assert list(local.shape) == shapes[hf], (name, local.shape, shapes[hf])
            boxes[hf] = ([0], list(local.shape))
            continue
        mapping = hf_rows(name, config, layer)
        # Megatron's master is [out, in], as transformers' tensors are.
        columns = shapes[mapping[1] if mapping[0] is None else mapping[0][0]][1]
        rows, cols = local.shape
        index = local.to(torch.int64)
        master_row, master_col = index // columns, index % columns
        # A part of the master: whole rows of one contiguous column range.
        col0 = int(master_col[0, 0])
        assert torch.equal(master_col, torch.arange(col0, col0 + cols).expand(rows, cols)), name
        assert torch.equal(master_row, master_row[:, :1].expand(rows, cols)), name
        local_rows = master_row[:, 0].tolist()
        if mapping[0] is None:  # one transformers tensor, the master's rows
            parts = {mapping[1]: local_rows}
        else:
            parts = {}
            for r in local_rows:
                hf, hf_row = mapping[r]
                parts.setdefault(hf, []).append(hf_row)
        for hf, here in parts.items():
            assert here == list(range(here[0], here[0] + len(here))), (name, hf, here)
            boxes[hf] = ([here[0], col0], [len(here), cols])
        weights.append((name, index, mapping, columns))
    return sorted(set(layers.values())), boxes, weights


def fused_master(mapping, reference, columns):
    """Megatron's whole weight built from the reference's transformers tensors."""
    if mapping[0] is None:
        return reference[mapping[1]]
    return torch.stack([reference[hf][row] for hf, row in mapping]).view(-1, columns)


def fuse_rank_file(mapping, index, columns, mine, boxes):
    """This rank's Megatron weight made from the rank's own file alone: each local row taken from
    the transformers tensor (and row within the rank's box) the name mapping says."""
    rows = (index[:, 0] // columns).tolist()
    if mapping[0] is None:
        return mine[mapping[1]]
    out = []
    for r in rows:
        hf, hf_row = mapping[r]
        out.append(mine[hf][hf_row - boxes[hf][0][0]])
    return torch.stack(out)


def check_megatron_reads_them(model, config, mine, whole, weights, boxes):
    """Megatron's own forward code, on this rank's file fused as above, must see transformers'
    tensors where the name mapping says: get_query_key_value_tensors splits linear_qkv into
    exactly the rank's q, k and v shards (bitwise: the input is the identity), and the
    tensor-parallel MLP (linear_fc1's gate and up, swiglu, linear_fc2 and its all-reduce over
    gloo) computes transformers' LlamaMLP with the whole reference tensors."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP
    fused = {name: fuse_rank_file(mapping, index, columns, mine, boxes)
             for name, index, mapping, columns in weights}
    hidden = config["hidden_size"]
    reference_mlp = LlamaMLP(LlamaConfig(**config))
    for i, block in enumerate(model.decoder.layers):
        prefix, layer = "decoder.layers.%d." % i, "model.layers.%d." % (block.layer_number - 1)
        with torch.no_grad():
            attention = block.self_attention
            attention.linear_qkv.weight.copy_(fused[prefix + "self_attention.linear_qkv.weight"])
            identity = torch.eye(hidden).unsqueeze(1)  # [sequence, batch, hidden]
            query, key, value = attention.get_query_key_value_tensors(identity, None)
            for got, name in ((query, "q_proj"), (key, "k_proj"), (value, "v_proj")):
                name = layer + "self_attn.%s.weight" % name
                assert torch.equal(got.reshape(hidden, -1).T, mine[name].float()), \
                    "Megatron's linear_qkv does not hold %s where the mapping puts it" % name

            mlp = block.mlp
            mlp.linear_fc1.weight.copy_(fused[prefix + "mlp.linear_fc1.weight"])
            mlp.linear_fc2.weight.copy_(fused[prefix + "mlp.linear_fc2.weight"])
            for name in ("gate_proj", "up_proj", "down_proj"):
                getattr(reference_mlp, name).weight.copy_(whole[layer + "mlp.%s.weight" % name])
            # The same input on every rank; large enough that swiglu is far from linear.
            x = torch.randn(3, 1, hidden, generator=torch.Generator().manual_seed(i)) * 8
            got, _ = mlp(x)
            torch.testing.assert_close(got, reference_mlp(x), rtol=1e-4, atol=1e-5,
                                       msg=lambda m: "%sMLP: %s" % (layer, m))


def check_sharded_state_dict(model, layer_numbers, boxes_by_megatron):
    """Megatron's dist-checkpointing metadata: the layers' global numbers and the weights' global
    offsets are those the element indices gave."""
    from megatron.core.dist_checkpointing.mapping import ShardedTensor, ShardedTensorFactory
    seen = 0
    for key, value in model.sharded_state_dict().items():
        tensors = (value.build() if isinstance(value, ShardedTensorFactory) else
                   [value] if isinstance(value, ShardedTensor) else [])
        for tensor in tensors:
            offset = list(tensor.global_offset)
            if key.startswith("decoder.layers."):
                layer = int(key.split(".")[2])
                assert offset[0] == layer_numbers[layer], (key, offset)
                offset = offset[1:]
            expected = boxes_by_megatron[key]
            assert offset in expected, (key, offset, expected)
            seen += 1
    return seen


def main():
    prog, reference, ckpt, config_path, mesh = sys.argv[1:6]
    warnings.filterwarnings("ignore", message=".*(Apex|Transformer Engine).*")
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.set_num_threads(1)
    config = json.load(open(config_path))
    sizes = dict((axis.split("=")[0], int(axis.split("=")[1])) for axis in mesh.split(","))
    tp, pp = sizes.get("tp", 1), sizes.get("pp", 1)
    model, where = megatron_model(config, tp, pp)
    whole = load_file(reference)
    layers, megatron, weights = megatron_boxes(
        model, config, {name: list(t.shape) for name, t in whole.items()})

    # initc's boxes for this rank: the tensors it holds any of.
    program = initc.load(prog)
    ours, buffers = {}, set()
    for param in program.params(rank):
        if param.is_buffer:
            buffers.add(param.name)
        elif 0 not in param.slice_shape:
            ours[param.name] = (list(param.slice_offset), list(param.slice_shape))
    program.close()
    our_layers = sorted({int(n.split(".")[2]) for n in ours if n.startswith("model.layers.")})
    assert our_layers == layers, "rank %d (%s): Megatron builds layers %s, ours %s" % (
        rank, where, layers, our_layers)
    for name in sorted(set(ours) | set(megatron)):
        assert ours.get(name) == megatron.get(name), \
            "rank %d (%s): %s is %s in Megatron's layout, %s in ours" % (
                rank, where, name, megatron.get(name), ours.get(name))

    # Bytes: the rank's file fused as Megatron fuses it, against Megatron's part of the
    # reference at Megatron's own element indices.
    mine = load_file(os.path.join(ckpt, "rank-%05d-of-%05d.safetensors" % (rank, world)))
    assert set(mine) - buffers == set(ours), sorted((set(mine) - buffers) ^ set(ours))
    for name, index, mapping, columns in weights:
        expected = fused_master(mapping, whole, columns).reshape(-1)[index]
        got = fuse_rank_file(mapping, index, columns, mine, megatron)
        assert got.shape == expected.shape, (rank, name, got.shape, expected.shape)
        assert _bits(got).equal(_bits(expected)), "rank %d: %s differs" % (rank, name)
    for name, (offset, shape) in megatron.items():
        if len(shape) == 1:
            assert _bits(mine[name]).equal(_bits(whole[name])), "rank %d: %s" % (rank, name)

    check_megatron_reads_them(model, config, mine, whole, weights, megatron)

    # Megatron's checkpoint metadata names the same global layers and offsets.
    layer_numbers = {i: block.layer_number - 1 for i, block in enumerate(model.decoder.layers)}
    offsets = {}
    for name, index, mapping, columns in weights:
        first = index[:, 0] // columns
        # A stride-2 weight (linear_fc1) is two parts, each with its own offset.
        starts = [0] if not name.endswith("linear_fc1.weight") else [0, index.shape[0] // 2]
        offsets[name] = [[int(first[s]), int(index[0, 0] % columns)] for s in starts]
    for name, param in model.named_parameters():
        if param.dim() == 1:
            offsets[name] = [[0]]
    seen = check_sharded_state_dict(model, layer_numbers, offsets)

    print("rank %d (%s): %d tensors on Megatron's boxes and bytes, layers %s, "
          "%d checkpoint shards agree" % (rank, where, len(ours), layers, seen), flush=True)
    leave()


if __name__ == "__main__":
    main()
