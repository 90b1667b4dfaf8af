#!/usr/bin/env python3
"""PyTorch particles published to membridge-view: `python torch_particles.py --name particles`, then
`membridge-view --name particles` (any time; viewers may come and go). One GrowableBuffer holds
`slots` frames of float4 points (xyz, w = speed); torch writes frame f into slot f % slots between
acquire and release on its stream, and a viewer draws each slot when its frame is announced."""
import argparse
import math
import time

import torch

import membridge

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--name", default="torch-particles", help="socket name (membridge-view --name NAME)")
p.add_argument("--particles", type=int, default=1_000_000)
p.add_argument("--frames", type=int, default=0, help="stop after this many frames (0: no limit)")
p.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: no limit; Ctrl-C stops too)")
p.add_argument("--slots", type=int, default=3)
a = p.parse_args()

device = membridge.Device(0)
n = a.particles
points = membridge.GrowableBuffer(device, (a.slots * n, 4), "float32", max_rows=a.slots * n)
slots = torch.as_tensor(points, device="cuda").view(a.slots, n, 4)  # no copy: the buffer's memory

gen = torch.Generator(device="cuda").manual_seed(1)
pos = torch.rand((n, 3), device="cuda", generator=gen) * 2 - 1
vel = torch.zeros_like(pos)
up = torch.tensor([0.0, 1.0, 0.0], device="cuda").expand(n, 3)
dt = 1.0 / 120

with membridge.FramePublisher(device, a.name, slots=a.slots, publisher_name="torch_particles") as pub:
    pub.publish_buffer("points", points, membridge.layout.points("float4"))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the initial state was made on the default stream
    print(f"publishing {n} particles as '{a.name}' ({pub.path}); view with: membridge-view --name {a.name}")
    frame, last_frame, last_time = 0, 0, time.perf_counter()
    try:
        end = time.perf_counter() + a.seconds if a.seconds else float("inf")
        while (a.frames == 0 or frame < a.frames) and time.perf_counter() < end:
            # Never more than `slots` frames ahead of the viewers (as sample 03's C++ producer): the slot's
            # last reader is done, so the GPU wait acquire enqueues is already met.
            while frame >= a.slots and not pub.wait_consumed(frame - a.slots, 0.1):
                pass  # returns to Python every 0.1 s, so Ctrl-C still stops
            with torch.cuda.stream(stream):
                pub.acquire(stream.cuda_stream, frame)  # the GPU waits until viewers are done with this slot
                d = -pos  # towards an attractor circling the origin
                d[:, 0] += 0.5 * math.cos(frame * dt)
                d[:, 2] += 0.5 * math.sin(frame * dt)
                r2 = (d * d).sum(1, keepdim=True) + 0.01
                vel += dt * (0.05 * d / r2.pow(1.5) + 0.3 * torch.cross(d, up, dim=1))
                vel *= 0.995
                pos += dt * vel
                pos.clamp_(-1.5, 1.5)
                slot = slots[frame % a.slots]
                slot[:, :3] = pos
                slot[:, 3] = vel.norm(dim=1)
                pub.release(stream.cuda_stream, frame)  # the frame is written when the stream gets here
            pub.publish_frame(frame)
            frame += 1
            if (now := time.perf_counter()) - last_time >= 1.0:
                print(f"frame {frame}: {(frame - last_frame) / (now - last_time):.0f} fps, "
                      f"{pub.subscriber_count} subscriber(s)", flush=True)
                last_frame, last_time = frame, now
    except KeyboardInterrupt:
        pass
    stream.synchronize()
    pub.drain(5.0)  # viewers finish the last frame before the timeline goes
print(f"published {frame} frames")
