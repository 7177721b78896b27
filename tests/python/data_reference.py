"""Independent references for tests/python/test_data.py, written from the
specifications rather than from lazytrain's code paths:

* std::mt19937_64 (C++ [rand.predef]; the standard fixes its 10000th output),
  the generator behind every shuffle and masking draw of src/data/;
* Hugging Face's masking rule (DataCollatorForLanguageModeling.torch_mask_tokens)
  drawn from it the way src/data/data_collator.h documents;
* the epoch order (Fisher-Yates with raw 64-bit draws) and torch's
  DistributedSampler split;
* TFRecord framing with CRC32C and the tf.train.Example wire format
  (protobuf), to read shards without lazytrain.
"""
import struct

import numpy as np

MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64: w=64, n=312, m=156, r=31, a=0xb5026f5aa96619e9,
    u=29, d=0x5555555555555555, s=17, b=0x71d67fffeda60000, t=37,
    c=0xfff7eee000000000, l=43, f=6364136223846793005."""

    def __init__(self, seed=5489):
        self.mt = [0] * 312
        self.mt[0] = seed & MASK64
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64
        self.index = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            mt[i] = mt[(i + 156) % 312] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def stream_seed(seed, stream):
    """The generator seed of batch `stream` (data_collator.h: splitmix64 of (seed, stream))."""
    z = (seed * 0x9E3779B97F4A7C15 + stream + 1) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mask_tokens(examples, vocab_size, mask_id, pad_id, special_ids, probability, rng, pad_to_multiple_of=None):
    """HF's padding and 80/10/10 masking, position by position in row-major
    order: select with uniform() < p; then [MASK] if uniform() < 0.8, else a
    random id if uniform() < 0.5. uniform() is 53 bits of a draw; a random id
    is (draw * vocab_size) >> 64."""
    def uniform():
        return (rng() >> 11) * 2.0 ** -53

    longest = max(len(ex["input_ids"]) for ex in examples)
    if pad_to_multiple_of:
        longest = -(-longest // pad_to_multiple_of) * pad_to_multiple_of
    ids = np.full((len(examples), longest), pad_id, dtype=np.int64)
    attention = np.zeros_like(ids)
    special = np.ones_like(ids)
    for b, ex in enumerate(examples):
        n = len(ex["input_ids"])
        ids[b, :n] = ex["input_ids"]
        attention[b, :n] = ex.get("attention_mask", [1] * n)
        special[b, :n] = ex["special_tokens_mask"] if "special_tokens_mask" in ex else np.isin(ex["input_ids"], special_ids)
    labels = np.full_like(ids, -100)
    for k in range(ids.size):
        b, t = divmod(k, longest)
        if special[b, t] or not uniform() < probability:
            continue
        labels[b, t] = ids[b, t]
        if uniform() < 0.8:
            ids[b, t] = mask_id
        elif uniform() < 0.5:
            ids[b, t] = (rng() * vocab_size) >> 64
    return {"input_ids": ids, "attention_mask": attention, "labels": labels}


def epoch_order(n, shuffle, seed, epoch):
    order = list(range(n))
    if shuffle:
        rng = MT19937_64((seed * 1000003 + epoch) & MASK64)
        for i in range(n, 1, -1):
            j = rng() % i
            order[i - 1], order[j] = order[j], order[i - 1]
    return order


def distributed_share(n, num_replicas, rank, shuffle, seed, drop_last, epoch):
    """torch.utils.data.DistributedSampler.__iter__ with the epoch order above."""
    indices = epoch_order(n, shuffle, seed, epoch)
    if drop_last and n % num_replicas:
        num_samples = -(-(n - num_replicas) // num_replicas)
    else:
        num_samples = -(-n // num_replicas)
    total = num_samples * num_replicas
    if not drop_last:
        padding = total - len(indices)
        indices += (indices * -(-padding // len(indices)))[:padding] if padding > 0 else []
    else:
        indices = indices[:total]
    return indices[rank:total:num_replicas]


# ---- TFRecord and tf.train.Example, read without lazytrain ----
def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def masked_crc32c(data):
    c = 0xFFFFFFFF
    for byte in data:
        c = _CRC_TABLE[(c ^ byte) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The records of a TFRecord file, every CRC checked, and each record's byte offset."""
    with open(path, "rb") as f:
        data = f.read()
    records, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        assert masked_crc32c(data[pos:pos + 8]) == length_crc
        payload = data[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack_from("<I", data, pos + 12 + length)
        assert masked_crc32c(payload) == data_crc
        records.append((pos, payload))
        pos += 16 + length
    return records


def _varint(buf, pos):
    result, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a protobuf message (varints and length-delimited only)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def parse_int64_example(payload):
    """tf.train.Example{features: Features{feature: map<string, Feature{int64_list: Int64List{value}}>}}."""
    out = {}
    for number, _, features in _fields(payload):
        assert number == 1  # Example.features
        for number, _, entry in _fields(features):
            assert number == 1  # Features.feature (a map entry)
            key, feature = None, None
            for n, _, v in _fields(entry):
                key, feature = (v.decode(), feature) if n == 1 else (key, v)
            values = []
            for n, _, int64_list in _fields(feature):
                assert n == 3  # Feature.int64_list
                for m, wire, v in _fields(int64_list):
                    if wire == 2:  # packed
                        pos = 0
                        while pos < len(v):
                            x, pos = _varint(v, pos)
                            values.append(x - (1 << 64) if x >> 63 else x)
                    else:
                        values.append(v - (1 << 64) if v >> 63 else v)
            out[key] = values
    return out
