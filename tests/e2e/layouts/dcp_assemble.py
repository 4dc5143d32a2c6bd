"""Reassembles a dcp-layout checkpoint the way PyTorch's HuggingFaceStorageReader reads it (every
*.safetensors file of DIR, each tensor placed at its DCP_SHARDING_INFO saved_offsets) and compares
every global tensor, byte for byte, with a whole-tensor safetensors file (`initc assemble` of the
same program's ranks layout). Fails when an element is stored twice or never, when a file holds
anything but its boxes, or when a byte differs. Standard library only.

    python3 dcp_assemble.py DIR reference.safetensors [--expect-split NAME]
"""
import json
import os
import struct
import sys

ITEM = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
        "U8": 1, "BOOL": 1}


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        meta = json.loads(f.read(n))
    return meta, 8 + n


def fail(message):
    print("dcp_assemble: " + message, file=sys.stderr)
    sys.exit(1)


def volume(shape):
    v = 1
    for s in shape:
        v *= s
    return v


def main():
    args = sys.argv[1:]
    split = []
    while "--expect-split" in args:
        i = args.index("--expect-split")
        split.append(args[i + 1])
        del args[i:i + 2]
    ckpt, reference = args
    ref, ref_start = header(reference)
    ref.pop("__metadata__", None)
    with open(reference, "rb") as f:
        ref_bytes = f.read()

    globals_ = {}   # name -> bytearray
    boxes = {}      # name -> [(offset, shape, file)]
    names = sorted(n for n in os.listdir(ckpt) if n.endswith(".safetensors"))
    if not names:
        fail(ckpt + " holds no .safetensors file")
    for name in names:
        path = os.path.join(ckpt, name)
        meta, start = header(path)
        extra = meta.pop("__metadata__", {})
        if extra.get("format") != "pt":
            fail(name + ": __metadata__ format is not pt")
        info = json.loads(extra["DCP_SHARDING_INFO"])
        initc = json.loads(extra["initc"])
        if set(info) != set(meta) or set(initc["tensors"]) != set(meta):
            fail(name + ": DCP_SHARDING_INFO, initc and the header list different tensors")
        with open(path, "rb") as f:
            data = f.read()
        for tensor, entry in meta.items():
            if tensor not in ref:
                fail(name + ": " + tensor + " is not in the reference")
            want = ref[tensor]
            if entry["dtype"] != want["dtype"]:
                fail(tensor + ": dtype " + entry["dtype"] + ", reference " + want["dtype"])
            if initc["tensors"][tensor]["global_shape"] != want["shape"]:
                fail(tensor + ": global_shape differs from the reference's shape")
            offset, shape = info[tensor]["saved_offsets"], entry["shape"]
            begin, end = entry["data_offsets"]
            item = ITEM[entry["dtype"]]
            if end - begin != volume(shape) * item:
                fail(name + ": " + tensor + ": bytes do not match its shape")
            gshape = want["shape"]
            if tensor not in globals_:
                globals_[tensor] = bytearray(volume(gshape) * item)
            out = globals_[tensor]
            boxes.setdefault(tensor, []).append((offset, shape, name))
            box = data[start + begin:start + end]
            # Row by row along the last dim: each row of the box is contiguous in the tensor.
            dims = len(shape)
            if dims == 0:
                out[:] = box
                continue
            if volume(shape) == 0:
                continue
            row = shape[-1] * item
            strides = [1] * dims
            for d in range(dims - 2, -1, -1):
                strides[d] = strides[d + 1] * gshape[d + 1]
            index = [0] * (dims - 1)
            local = 0
            while True:
                g = sum((offset[d] + index[d]) * strides[d] for d in range(dims - 1)) + offset[-1]
                out[g * item:g * item + row] = box[local:local + row]
                local += row
                d = dims - 2
                while d >= 0:
                    index[d] += 1
                    if index[d] < shape[d]:
                        break
                    index[d] = 0
                    d -= 1
                if d < 0:
                    break

    for tensor, want in ref.items():
        if tensor not in boxes:
            fail(tensor + ": in no file")
        parts = boxes[tensor]
        stored = sum(volume(s) for _, s, _ in parts)
        if stored != volume(want["shape"]):
            fail("%s: %d elements stored, the tensor has %d" % (tensor, stored, volume(want["shape"])))
        for i in range(len(parts)):
            for j in range(i + 1, len(parts)):
                (a, sa, fa), (b, sb, fb) = parts[i], parts[j]
                if volume(sa) and volume(sb) and all(
                        a[d] < b[d] + sb[d] and b[d] < a[d] + sa[d] for d in range(len(a))):
                    fail("%s: %s of %s and %s of %s overlap: stored twice" % (tensor, a, fa, b, fb))
        begin, end = want["data_offsets"]
        if bytes(globals_[tensor]) != ref_bytes[ref_start + begin:ref_start + end]:
            fail(tensor + ": the reassembled bytes differ from the reference")
    for tensor in split:
        if len({f for _, _, f in boxes.get(tensor, [])}) < 2:
            fail(tensor + ": expected its replicas to split it between files")
    print("ok %d tensors from %d files" % (len(ref), len(names)))


main()
