#!/usr/bin/env -S /usr/bin/python3
"""Minimal reader/writer of the Hugging Face safetensors format, for torch tensors.

File layout (https://github.com/huggingface/safetensors):
  8 bytes   u64 little-endian N = length of the JSON header
  N bytes   UTF-8 JSON: {"__metadata__": {str: str} (optional),
                         name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
            padded with spaces (0x20) so that 8 + N is a multiple of 8
  rest      raw little-endian tensor bytes; data_offsets are relative to the start of this block.
Tensors are written back to back (no gaps), C-contiguous, in the order of the reference Rust
writer: by dtype, widest first (I64, F64, F32, I32, BF16, F16, I16, I8, U8, BOOL), then by name.
So every tensor starts at an offset that is a multiple of its element size (8-aligned file start).
Readers must not rely on the order: data_offsets are authoritative.

Usage as a tool:  /usr/bin/python3 tools/safetensors_io.py FILE   (lists names, dtypes, shapes)
"""
import json
import struct
import sys

import torch

# safetensors dtype string <-> torch dtype
DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}
# Write order of safetensors' Rust serializer (sort by Dtype enum, descending; then by name).
_RANK = ["BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "F64", "I64"]
assert sys.byteorder == "little", "this tool assumes a little-endian host"


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def save_file(tensors: dict, path: str, metadata: dict = None) -> None:
    """Write {name: tensor} to `path`. `metadata` (str -> str) goes to "__metadata__"."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        if t.dtype not in NAMES:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
    for name in sorted(tensors, key=lambda k: (-_RANK.index(NAMES[tensors[k].dtype]), k)):
        t = tensors[name]
        data = _tensor_bytes(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - (8 + len(hjson)) % 8) % 8)  # pad so the data starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for data in blobs:
            f.write(data)


def load_file(path: str, with_metadata: bool = False):
    """Read a safetensors file -> {name: tensor} (and the metadata dict if with_metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, info in header.items():
        dtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        buf = bytearray(raw[base + begin:base + end])  # writable copy for torch.frombuffer
        if dtype == torch.bfloat16:
            flat = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16) if buf else \
                torch.empty(0, dtype=dtype)
        else:
            flat = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        out[name] = flat.reshape(info["shape"])
    return (out, metadata) if with_metadata else out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: safetensors_io.py FILE")
    tensors, meta = load_file(sys.argv[1], with_metadata=True)
    for k, v in meta.items():
        print(f"__metadata__[{k!r}] = {v}")
    for name in sorted(tensors):
        t = tensors[name]
        print(f"{name:60s} {NAMES[t.dtype]:5s} {list(t.shape)}")
