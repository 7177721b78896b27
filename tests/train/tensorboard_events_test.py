#!/usr/bin/env python3
"""TensorBoard event files written by lazytrain's SummaryWriter, parsed with the
published schema (proto/tensorboard/, compiled here by protoc) through Debian's
python3-protobuf: the framing and CRCs, file_version, tags, steps, wall times and
float32 values, and that protobuf re-serializes each record to the same bytes.

Usage: tensorboard_events_test.py <write_tensorboard_sample binary> <proto dir> [protoc]
"""
import math
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

WRITER, PROTO_DIR = sys.argv[1], sys.argv[2]
PROTOC = sys.argv[3] if len(sys.argv) > 3 else "protoc"

# (tag, step, value, walltime or "now"), as the Trainer logs them.
SCALARS = [
    ("train/loss", 1, "2.5", "now"),
    ("train/loss", 2, "0.1", "now"),  # not a float32: rounded to nearest
    ("train/learning_rate", 2, "5e-05", "1700000000.25"),
    ("train/grad_norm", 0, "1e30", "now"),  # step 0: omitted from the bytes, parsed as 0
    ("train/tokens_per_second", 3, "12345.678", "now"),
    ("eval/loss", 100, "-7.75", "1700000001.5"),
    ("eval/accuracy", 100, "0.3333333333333333", "now"),
    ("eval/perplexity", 2**40, "inf", "now"),
]


def crc32c(data):
    """CRC32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecords(path):
    """The records of a TFRecord file, checking both CRCs of each."""
    with open(path, "rb") as f:
        content = f.read()
    records, pos = [], 0
    while pos < len(content):
        header = content[pos:pos + 12]
        assert len(header) == 12, "truncated header at byte %d" % pos
        length, length_crc = struct.unpack("<QI", header)
        assert length_crc == masked_crc32c(header[:8]), "length CRC at byte %d" % pos
        data = content[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", content[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked_crc32c(data), "data CRC at byte %d" % pos
        records.append(data)
        pos += 16 + length
    return records


def float32(text):
    return struct.unpack("<f", struct.pack("<f", float(text)))[0]


class TensorBoardEvents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        gen = os.path.join(cls.tmp.name, "gen")
        os.mkdir(gen)
        protos = [os.path.join(PROTO_DIR, name) for name in ("event.proto", "summary.proto")]
        subprocess.run([PROTOC, "--python_out=" + gen, "-I" + PROTO_DIR] + protos, check=True)
        sys.path.insert(0, gen)
        import event_pb2  # noqa: E402 (generated above)

        cls.Event = event_pb2.Event
        cls.log_dir = os.path.join(cls.tmp.name, "runs", "Nov30_12-00-00_host")  # created by the writer
        args = [WRITER, cls.log_dir]
        for scalar in SCALARS:
            args += [str(part) for part in scalar]
        cls.before = time.time()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        cls.after = time.time()
        if proc.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (WRITER, proc.returncode, err))
        cls.pid = proc.pid
        cls.path = out.strip()
        cls.records = tfrecords(cls.path)
        cls.events = [cls.Event.FromString(r) for r in cls.records]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_file_name(self):
        self.assertEqual(os.listdir(self.log_dir), [os.path.basename(self.path)])
        self.assertEqual(os.path.dirname(self.path), self.log_dir)
        m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)", os.path.basename(self.path))
        self.assertIsNotNone(m, self.path)
        self.assertGreaterEqual(int(m.group(1)), int(self.before))
        self.assertLessEqual(int(m.group(1)), self.after)
        self.assertEqual(m.group(2), socket.gethostname())
        self.assertEqual(int(m.group(3)), self.pid)
        self.assertEqual(int(m.group(4)), 0)  # the process's first writer

    def test_file_version_first(self):
        first = self.events[0]
        self.assertEqual(first.WhichOneof("what"), "file_version")
        self.assertEqual(first.file_version, "brain.Event:2")
        self.assertEqual(first.step, 0)
        self.assertGreaterEqual(first.wall_time, self.before - 1e-3)
        self.assertLessEqual(first.wall_time, self.after)

    def test_scalars(self):
        self.assertEqual(len(self.events), 1 + len(SCALARS))
        for event, (tag, step, value, walltime) in zip(self.events[1:], SCALARS):
            with self.subTest(tag=tag, step=step):
                self.assertEqual(event.WhichOneof("what"), "summary")
                self.assertEqual(event.step, step)
                if walltime == "now":
                    self.assertGreaterEqual(event.wall_time, self.events[0].wall_time)
                    self.assertLessEqual(event.wall_time, self.after)
                else:
                    self.assertEqual(event.wall_time, float(walltime))
                self.assertEqual(len(event.summary.value), 1)
                v = event.summary.value[0]
                self.assertEqual(v.tag, tag)
                self.assertEqual(v.WhichOneof("value"), "simple_value")
                self.assertEqual(v.node_name, "")
                expected = float32(value)
                self.assertFalse(math.isnan(v.simple_value))
                self.assertEqual(v.simple_value, expected)
        # Spot checks that float32 rounding really happened and values are not all alike.
        self.assertNotEqual(self.events[2].summary.value[0].simple_value, 0.1)
        self.assertEqual(self.events[2].summary.value[0].simple_value, 0.10000000149011612)
        self.assertEqual(self.events[8].summary.value[0].simple_value, math.inf)

    def test_same_bytes_as_protobuf(self):
        # Our hand-written encoding equals protobuf's serialization of the parsed message.
        for i, (record, event) in enumerate(zip(self.records, self.events)):
            self.assertEqual(event.SerializeToString(), record, "record %d" % i)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
