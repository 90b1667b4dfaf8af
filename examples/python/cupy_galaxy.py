#!/usr/bin/env python3
"""CuPy particles (a spinning disc galaxy) published to membridge-view: `python cupy_galaxy.py --name
galaxy`, then `membridge-view --name galaxy`. A raw CUDA kernel integrates each star around a central
mass and writes float4 points (xyz, w = speed) straight into the membridge buffer's slot for the frame."""
import cupy as cp

import example_loop
import membridge

STEP = cp.RawKernel(r"""
extern "C" __global__ void step(float4* state, float4* out, int n, float dt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = state[2 * i], v = state[2 * i + 1];          // position, velocity (w unused)
  float r2 = p.x * p.x + p.z * p.z + 0.02f * p.y * p.y + 0.01f;
  float a = -1.0f / (r2 * sqrtf(r2));                      // a central mass
  v.x += dt * a * p.x; v.y += dt * a * p.y * 4.0f; v.z += dt * a * p.z;
  p.x += dt * v.x; p.y += dt * v.y; p.z += dt * v.z;
  state[2 * i] = p; state[2 * i + 1] = v;
  out[i] = make_float4(p.x, p.y, p.z, sqrtf(v.x * v.x + v.y * v.y + v.z * v.z));
}""", "step")

a = example_loop.parse_args(__doc__, "cupy-galaxy", "stars", 500_000)

device = membridge.Device(0)
n = a.stars
points = membridge.GrowableBuffer(device, (a.slots * n, 4), "float32", max_rows=a.slots * n)
slots = cp.asarray(points).reshape(a.slots, n, 4)  # no copy: the buffer's memory

rng = cp.random.default_rng(7)
radius = 0.1 + rng.random(n, dtype=cp.float32) ** 0.5
angle = rng.random(n, dtype=cp.float32) * 6.2831853
speed = (1.0 / radius) ** 0.5  # circular orbits
state = cp.zeros((n, 2, 4), dtype=cp.float32)
state[:, 0, 0], state[:, 0, 2] = radius * cp.cos(angle), radius * cp.sin(angle)
state[:, 0, 1] = 0.02 * rng.standard_normal(n, dtype=cp.float32)
state[:, 1, 0], state[:, 1, 2] = -speed * cp.sin(angle), speed * cp.cos(angle)

with membridge.FramePublisher(device, a.name, slots=a.slots, publisher_name="cupy_galaxy") as pub:
    pub.publish_buffer("points", points, membridge.layout.points("float4"))
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.Device().synchronize()  # the initial state is ready before the stream uses it
    print(f"publishing {n} stars as '{a.name}' ({pub.path}); view with: membridge-view --name {a.name}")

    def write_frame(frame):
        pub.acquire(stream, frame)  # the GPU waits until viewers are done with this slot
        STEP(((n + 255) // 256,), (256,), (state, slots[frame % a.slots], cp.int32(n), cp.float32(0.002)),
             stream=stream)
        pub.release(stream, frame)  # the frame is written when the stream gets here

    frame = example_loop.publish_frames(pub, a, write_frame)
    stream.synchronize()
    pub.drain(5.0)  # viewers finish the last frame before the timeline goes
print(f"published {frame} frames")
