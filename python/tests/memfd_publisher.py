"""Child process of test_package.py: publishes memfd-backed chunks filled with a seeded pattern,
announces frames, grows the buffer by one chunk, and stops when its stdin says so.

Usage: python memfd_publisher.py SOCKET_PATH SEED"""
from __future__ import annotations

import os
import random
import sys

import membridge

CHUNKS = [4096, 8192]
GROWTH = 4096


def pattern(seed: int, index: int, size: int) -> bytes:
    return random.Random(seed * 1000 + index).randbytes(size)


def memfd(seed: int, index: int, size: int) -> int:
    fd = os.memfd_create(f"membridge-test-{index}", os.MFD_CLOEXEC)
    os.write(fd, pattern(seed, index, size))
    return fd


def main() -> int:
    path, seed = sys.argv[1], int(sys.argv[2])
    with membridge.Publisher(path=path, publisher_name="pytest memfd publisher") as pub:
        fds = [memfd(seed, i, s) for i, s in enumerate(CHUNKS)]
        pub.publish_buffer("points", fds, CHUNKS, size=sum(CHUNKS) - 16, reserved_size=1 << 20,
                           layout=membridge.layout.points("float4"), stride=16)
        for fd in fds:  # the publisher duplicated them: ours may go
            os.close(fd)
        print("ready", flush=True)
        for line in sys.stdin:
            command = line.split()
            if command[0] == "frame":
                pub.announce_frame(int(command[1]))
            elif command[0] == "grow":
                fd = memfd(seed, len(CHUNKS), GROWTH)
                pub.update_buffer("points", sum(CHUNKS) + GROWTH, [fd], [GROWTH])
                os.close(fd)
            elif command[0] == "count":
                print(f"subscribers {pub.subscriber_count}", flush=True)
                continue
            elif command[0] == "stop":
                break
            print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
