#!/usr/bin/env python3
"""PyTorch particles published to membridge-view: `python torch_particles.py --name particles`, then
`membridge-view --name particles` (any time; viewers may come and go). One GrowableBuffer holds
`slots` frames of float4 points (xyz, w = speed); torch writes frame f into slot f % slots between
acquire and release on its stream, and a viewer draws each slot when its frame is announced."""
import math

import torch

import example_loop
import membridge

a = example_loop.parse_args(__doc__, "torch-particles", "particles", 1_000_000)

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

    def write_frame(frame):
        global vel, pos  # updated in place, but `+=` names them here
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

    frame = example_loop.publish_frames(pub, a, write_frame)
    stream.synchronize()
    pub.drain(5.0)  # viewers finish the last frame before the timeline goes
print(f"published {frame} frames")
