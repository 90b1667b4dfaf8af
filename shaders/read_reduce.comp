#version 460
// membridge_bench_vulkan_read: reads a whole storage buffer with 16-byte loads (uvec4), four loads in
// flight per invocation, and writes one 32-bit sum (mod 2^32) of the words each workgroup read.
// Grid-stride over uvec4 elements: invocation g (global index) reads elements g, g + stride, ...
// with stride = gl_NumWorkGroups.x * 256, so workgroup w sums every element e with
// (e mod stride) / 256 == w; the benchmark computes those sums on the CPU from the pattern and
// compares every workgroup's result (a wrong binding, a skipped element or a missing write fails).

layout(local_size_x = 256) in;

// The buffer read (binding 0, the whole range): n4 uvec4 elements.
layout(std430, set = 0, binding = 0) readonly buffer input_buffer {
  uvec4 data[];
};

// One sum per workgroup (binding 1).
layout(std430, set = 0, binding = 1) writeonly buffer output_buffer {
  uint sums[];
};

layout(push_constant) uniform push_constants {
  uint n4;  // uvec4 elements to read
} pc;

shared uint partial[256];

void main() {
  const uint stride = gl_NumWorkGroups.x * 256u;
  uint i = gl_GlobalInvocationID.x;
  uvec4 acc = uvec4(0u);
  for (; i + 3u * stride < pc.n4; i += 4u * stride) {
    const uvec4 a = data[i];
    const uvec4 b = data[i + stride];
    const uvec4 c = data[i + 2u * stride];
    const uvec4 d = data[i + 3u * stride];
    acc += (a + b) + (c + d);
  }
  for (; i < pc.n4; i += stride) acc += data[i];

  const uint t = gl_LocalInvocationID.x;
  partial[t] = acc.x + acc.y + acc.z + acc.w;
  barrier();
  for (uint k = 128u; k > 0u; k >>= 1u) {
    if (t < k) partial[t] += partial[t + k];
    barrier();
  }
  if (t == 0u) sums[gl_WorkGroupID.x] = partial[0];
}
