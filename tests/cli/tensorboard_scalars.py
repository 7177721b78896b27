#!/usr/bin/env python3
"""Prints the scalars of every TensorBoard event file under a log directory as
JSON {tag: [[step, value], ...]}, parsed with the published schema
(proto/tensorboard/event.proto, summary.proto, compiled by protoc) through
Debian's python3-protobuf. Exits 1 when a record's CRC or the file_version is wrong.

Usage: tensorboard_scalars.py <proto dir> <log dir> [protoc]
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile

PROTO_DIR, LOG_DIR = sys.argv[1], sys.argv[2]
PROTOC = sys.argv[3] if len(sys.argv) > 3 else "protoc"


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        content = f.read()
    pos = 0
    while pos < len(content):
        length, length_crc = struct.unpack("<QI", content[pos:pos + 12])
        if length_crc != masked_crc32c(content[pos:pos + 8]):
            sys.exit("%s: bad length CRC at byte %d" % (path, pos))
        data = content[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", content[pos + 12 + length:pos + 16 + length])
        if data_crc != masked_crc32c(data):
            sys.exit("%s: bad data CRC at byte %d" % (path, pos))
        yield data
        pos += 16 + length


def main():
    out_dir = tempfile.mkdtemp()
    subprocess.check_call([PROTOC, "-I", PROTO_DIR, "--python_out", out_dir,
                           os.path.join(PROTO_DIR, "event.proto"), os.path.join(PROTO_DIR, "summary.proto")])
    sys.path.insert(0, out_dir)
    import event_pb2  # noqa: E402

    scalars = {}
    files = sorted(glob.glob(os.path.join(LOG_DIR, "**", "events.out.tfevents.*"), recursive=True))
    if not files:
        sys.exit("no event file under %s" % LOG_DIR)
    for path in files:
        first = True
        for data in records(path):
            event = event_pb2.Event()
            event.ParseFromString(data)
            if first:
                if event.file_version != "brain.Event:2":
                    sys.exit("%s: first event is not file_version brain.Event:2" % path)
                first = False
                continue
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append([event.step, value.simple_value])
    print(json.dumps(scalars))


main()
