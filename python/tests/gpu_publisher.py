"""Child process of test_gpu.py: publishes a GrowableBuffer of float4 points through a FramePublisher,
fills frame f's slot with a seeded pattern from torch, and answers commands on stdin.

Usage: python gpu_publisher.py SOCKET_PATH SEED ROWS_PER_SLOT SLOTS"""
from __future__ import annotations

import sys

import torch

import membridge


def slot_values(seed: int, frame: int, rows: int) -> torch.Tensor:
    """The pattern of frame `frame`: rows x 4 floats, exactly representable."""
    base = torch.arange(rows * 4, dtype=torch.float32, device="cuda").reshape(rows, 4)
    return (base + float((seed % 1000) * 16 + frame)).remainder_(1 << 20)


def main() -> int:
    path, seed, rows, slots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dev = membridge.Device(0)
    buf = membridge.GrowableBuffer(dev, (rows * slots, 4), "float32", max_rows=rows * slots * 8)
    points = torch.as_tensor(buf, device="cuda")
    with membridge.FramePublisher(dev, path=path, slots=slots, publisher_name="pytest gpu publisher") as pub:
        pub.publish_buffer("points", buf, membridge.layout.points("float4"))
        stream = torch.cuda.current_stream()
        print("ready", flush=True)
        for line in sys.stdin:
            command = line.split()
            if command[0] == "frame":
                f = int(command[1])
                pub.acquire(stream.cuda_stream, f)
                s = pub.slot(f)
                points[s * rows:(s + 1) * rows].copy_(slot_values(seed, f, rows))
                pub.release(stream.cuda_stream, f)
                stream.synchronize()  # the subscriber (an observer) reads after the frame event
                pub.publish_frame(f)
            elif command[0] == "stop":
                break
            print("ok", flush=True)
        torch.cuda.synchronize()
        pub.drain(5.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
