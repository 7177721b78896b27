#!/usr/bin/env -S /usr/bin/python3 -I -S
"""Checks a model.safetensors against the safetensors specification and a reference file,
with Python's standard library alone (json, struct; no torch, no numpy, no safetensors).

  /usr/bin/python3 -I -S tools/check_safetensors_checkpoint.py REFERENCE CANDIDATE

The specification (huggingface/safetensors README, "Format", and its Rust serializer
safetensors/src/tensor.rs), checked on both files:
  * 8 bytes: N, an unsigned little-endian 64-bit integer, the size of the header;
  * N bytes: a UTF-8 JSON object, no duplicate keys, padded at the end with spaces
    (0x20) so that 8 + N is a multiple of 8; "__metadata__" (first, as the serializer
    writes it) maps strings to strings and is {"format": "pt"}, as transformers writes;
  * every other key is a tensor {"dtype", "shape", "data_offsets": [begin, end]} with a
    known dtype, non-negative integer dimensions and end - begin = numel * itemsize;
  * the byte buffer is covered exactly: the header lists tensors in buffer order,
    each beginning where the previous one ended, the last ending at the end of the file;
  * that order is the serializer's: by decreasing dtype alignment, then by name.
Then the candidate is compared with the reference: the same names, dtypes, shapes and raw
bytes, and finally the same file bytes. Exit status 0 when everything holds, else 1 with
one line per problem.
"""
import json
import struct
import sys

# The serializer's Dtype enum in increasing alignment (sort key), with sizes in bytes.
DTYPES = [("BOOL", 1), ("U8", 1), ("I8", 1), ("F8_E5M2", 1), ("F8_E4M3", 1), ("F8_E8M0", 1), ("I16", 2),
          ("U16", 2), ("F16", 2), ("BF16", 2), ("I32", 4), ("U32", 4), ("F32", 4), ("C64", 8), ("F64", 8),
          ("I64", 8), ("U64", 8)]
RANK = {name: i for i, (name, _) in enumerate(DTYPES)}
SIZE = dict(DTYPES)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"duplicate keys {dup}")
    return dict(pairs)


def read(path, problems):
    """-> (metadata, [(name, dtype, shape, bytes)] in header order, raw file bytes)."""
    with open(path, "rb") as f:
        raw = f.read()

    def bad(msg):
        problems.append(f"{path}: {msg}")

    if len(raw) < 8:
        bad("shorter than the 8-byte header length")
        return None
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        bad(f"header length {n} exceeds the file ({len(raw)} bytes)")
        return None
    if (8 + n) % 8:
        bad(f"8 + header length {n} is not a multiple of 8")
    text = raw[8:8 + n].decode("utf-8")  # raises on invalid UTF-8
    body = text.rstrip(" ")
    if not body.endswith("}") or len(text) - len(body) > 7:
        bad("header is not a JSON object padded with at most 7 spaces")
    header = json.loads(body, object_pairs_hook=no_duplicates)
    if not isinstance(header, dict):
        bad("header is not a JSON object")
        return None
    keys = list(header)
    metadata = header.get("__metadata__")
    if metadata != {"format": "pt"}:
        bad(f"__metadata__ is {metadata!r}; expected {{'format': 'pt'}}")
    if keys and keys[0] != "__metadata__":
        bad("__metadata__ is not the first key")
    buffer = raw[8 + n:]
    tensors, end = [], 0
    for name in (k for k in keys if k != "__metadata__"):
        info = header[name]
        if not isinstance(info, dict) or sorted(info) != ["data_offsets", "dtype", "shape"]:
            bad(f"{name}: entry {info!r} is not {{dtype, shape, data_offsets}}")
            continue
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SIZE:
            bad(f"{name}: unknown dtype {dtype!r}")
            continue
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            bad(f"{name}: shape {shape!r} is not a list of non-negative integers")
            continue
        numel = 1
        for d in shape:
            numel *= d
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            bad(f"{name}: data_offsets {offsets!r} is not [begin, end]")
            continue
        begin, stop = offsets
        if begin != end:
            bad(f"{name}: begins at {begin}, the previous tensor ended at {end} (not contiguous in buffer order)")
        if stop - begin != numel * SIZE[dtype]:
            bad(f"{name}: {stop - begin} bytes for {dtype}{shape}; expected {numel * SIZE[dtype]}")
        tensors.append((name, dtype, shape, buffer[begin:stop]))
        end = stop
    if end != len(buffer):
        bad(f"tensors cover {end} bytes of a {len(buffer)}-byte buffer")
    order = [t[0] for t in tensors]
    expected = sorted(order, key=lambda k: (-RANK[header[k]["dtype"]], k))
    if order != expected:
        bad("tensors are not in the serializer's order (decreasing dtype alignment, then name)")
    return metadata, tensors, raw


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_safetensors_checkpoint.py REFERENCE CANDIDATE")
    ref_path, out_path = sys.argv[1:]
    problems = []
    ref, out = read(ref_path, problems), read(out_path, problems)
    if ref and out:
        r = {t[0]: t[1:] for t in ref[1]}
        o = {t[0]: t[1:] for t in out[1]}
        for name in sorted(set(r) - set(o)):
            problems.append(f"{out_path}: missing {name}")
        for name in sorted(set(o) - set(r)):
            problems.append(f"{out_path}: unexpected {name}")
        for name in sorted(set(r) & set(o)):
            (rd, rs, rb), (od, os_, ob) = r[name], o[name]
            if (rd, rs) != (od, os_):
                problems.append(f"{name}: {od}{os_}, the reference has {rd}{rs}")
            elif rb != ob:
                first = next(i for i in range(len(rb)) if rb[i] != ob[i])
                problems.append(f"{name}: bytes differ from byte {first} on")
        if not problems and ref[2] != out[2]:
            problems.append(f"{out_path}: same tensors but the file bytes differ from {ref_path}")
    for p in problems:
        print("FAIL", p)
    if problems:
        sys.exit(1)
    print(f"OK {out_path}: {len(out[1])} tensors, names, dtypes, shapes and bytes equal to {ref_path}; file identical")


if __name__ == "__main__":
    main()
