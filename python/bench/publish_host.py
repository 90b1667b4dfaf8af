#!/usr/bin/env python3
"""Host time per frame of publishing from Python vs the same loop in C++ (membridge_bench_publish_host).

Per frame, on one non-blocking stream and with no subscriber (the producer runs free):
FramePublisher.acquire, a cudaMemsetAsync of the frame's slot, FramePublisher.release and
publish_frame. The C++ benchmark runs the identical calls. Both run pinned to the same two CPUs (--cpus;
the C++ child inherits the affinity): unpinned, the C++ blocks' medians spread 5.0-7.8 us between
processes. Blocks of the three paths are interleaved:

  cpp            membridge_bench_publish_host (one block per run)
  python memset  this process; the memset through cupy.cuda.runtime.memsetAsync (the same runtime call)
  python torch   this process; the slot written by torch's fill_ (informative: torch's own op overhead)

Every slot's first and last byte are checked after each block. Prints a table and one JSON line whose
goals hold python_publish_host_time_ratio = median host time (python memset) / median (cpp), target <= 1.2.
Exit status: 0 data checked (goals met or not), 1 failure, 2 no usable CUDA device.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def find_cpp(given: str | None) -> str:
    candidates = [given] if given else [
        shutil.which("membridge_bench_publish_host"),
        str(ROOT / ".gpu-bundle/bin/membridge_bench_publish_host"),
        *map(str, sorted(ROOT.glob("build/*/bench/publish_host/membridge_bench_publish_host"))),
    ]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise SystemExit(f"publish_host.py: membridge_bench_publish_host not found (tried {candidates}); pass --cpp")


def frame_byte(frame: int) -> int:
    return frame % 251 + 1


class PythonPath:
    """The frame loop from Python on one FramePublisher and buffer."""

    def __init__(self, membridge, torch, cupy, device, args, sock: str):
        self.torch, self.cupy, self.args = torch, cupy, args
        self.buf = membridge.GrowableBuffer(device, (args.slots, args.slot_bytes), "uint8", max_rows=4 * args.slots)
        self.view = torch.as_tensor(self.buf, device="cuda")
        assert self.view.data_ptr() == self.buf.ptr
        self.pub = membridge.FramePublisher(device, path=sock, slots=args.slots)
        self.pub.publish_buffer("points", self.buf, membridge.layout.points("float4"), stride=16)
        self.stream = torch.cuda.Stream()
        self.frame = 0

    def block(self, how: str) -> list[float]:
        slots, size = self.args.slots, self.args.slot_bytes
        s, base = self.stream.cuda_stream, self.buf.ptr
        if how == "memset":
            memset = self.cupy.cuda.runtime.memsetAsync
            out, f = self.timed_frames(lambda f: memset(base + (f % slots) * size, frame_byte(f), size, s))
        else:
            view = self.view
            with self.torch.cuda.stream(self.stream):
                out, f = self.timed_frames(lambda f: view[f % slots].fill_(frame_byte(f)))
        self.stream.synchronize()
        self.frame = f
        self.verify(f - 1)
        return out

    def timed_frames(self, fill) -> tuple[list[float], int]:
        """Times warmup + frames cycles from self.frame on: acquire, fill(f) (the frame's writes on the
        stream), release, publish_frame. Returns the microseconds of each cycle after the warmup and the
        next frame number."""
        a, pub, s, f = self.args, self.pub, self.stream.cuda_stream, self.frame
        clock = time.perf_counter_ns
        out: list[float] = []
        for i in range(a.warmup + a.frames):
            t0 = clock()
            pub.acquire(s, f)
            fill(f)
            pub.release(s, f)
            pub.publish_frame(f)
            t1 = clock()
            if i >= a.warmup:
                out.append((t1 - t0) / 1000.0)
            f += 1
        return out, f

    def verify(self, last: int) -> None:
        slots = self.args.slots
        for slot in range(min(slots, last + 1)):
            f = last - ((last - slot) % slots)
            edges = (int(self.view[slot, 0].item()), int(self.view[slot, -1].item()))
            if edges != (frame_byte(f), frame_byte(f)):
                raise RuntimeError(f"slot {slot} holds {edges}, expected frame {f}'s byte {frame_byte(f)}")

    def close(self) -> None:
        self.pub.drain(5.0)
        self.pub.close()


def run_cpp(cpp: str, args) -> dict:
    cmd = [cpp, "--blocks", "1", "--frames", str(args.frames), "--warmup", str(args.warmup), "--slots", str(args.slots),
           "--slot-bytes", str(args.slot_bytes), "--device", str(args.device)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    line = [x for x in r.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(line)


def pin_cpus(spec: str) -> list[int]:
    """Pins this thread (and so every thread and process it starts) to the CPUs `spec` names."""
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "none":
        return allowed
    if spec == "auto":
        mid = len(allowed) // 2
        chosen = allowed[max(0, mid - 1):mid + 1] if len(allowed) >= 2 else allowed
    else:
        chosen = sorted({int(c) for c in spec.split(",")})
        if not set(chosen) <= set(allowed):
            raise SystemExit(f"publish_host.py: --cpus {spec}: not all in the allowed set {allowed}")
    os.sched_setaffinity(0, chosen)
    return chosen


def stats(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=10)
    return {"count": len(values), "median": round(statistics.median(values), 3), "p10": round(q[0], 3),
            "p90": round(q[-1], 3), "max": round(max(values), 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpp", help="membridge_bench_publish_host (default: PATH, .gpu-bundle/bin, build/*/bench)")
    p.add_argument("--frames", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--blocks", type=int, default=9)
    p.add_argument("--slots", type=int, default=3)
    p.add_argument("--slot-bytes", type=int, default=1 << 20)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="2 blocks of 200 frames after 20 warm-up")
    p.add_argument("--json", help="also write the JSON line to FILE")
    p.add_argument("--cpus", default="auto",
                   help="comma-separated CPUs this process and the C++ runs are pinned to (inherited by every thread "
                        "and child), so both paths run on the same cores; 'auto': two from the middle of the "
                        "allowed set; 'none': no pinning")
    args = p.parse_args()
    if args.quick:
        args.frames, args.warmup, args.blocks = 200, 20, 2
    cpus = pin_cpus(args.cpus)  # before any thread exists: the driver's, the publisher's and the C++ child inherit it

    import membridge
    try:
        device = membridge.Device(args.device)
    except membridge.Error as e:
        print(f"no usable CUDA device: {e}", file=sys.stderr)
        return 2
    import cupy
    import torch
    if not torch.cuda.is_available():
        print("no usable CUDA device: torch sees none", file=sys.stderr)
        return 2
    torch.cuda.set_device(args.device)
    cpp = find_cpp(args.cpp)

    paths = ["cpp", "python memset", "python torch"]
    times: dict[str, list[float]] = {"python memset": [], "python torch": []}  # pooled per-frame times
    block_medians: dict[str, list[float]] = {k: [] for k in paths}
    cpp_json: dict = {}
    with tempfile.TemporaryDirectory(prefix="mb-py-bench-") as d:
        py = PythonPath(membridge, torch, cupy, device, args, os.path.join(d, "publish.sock"))
        try:
            for b in range(args.blocks):
                for path in paths[b % 3:] + paths[:b % 3]:  # who goes first rotates
                    if path == "cpp":
                        cpp_json = run_cpp(cpp, args)  # one block: its median is the block's
                        block_medians[path].append(cpp_json["host_us"]["median"])
                    else:
                        block = py.block("memset" if path == "python memset" else "torch")
                        times[path].extend(block)
                        block_medians[path].append(statistics.median(block))
        finally:
            py.close()

    cpp_median = statistics.median(block_medians["cpp"])
    py_median = statistics.median(block_medians["python memset"])
    ratio = py_median / cpp_median
    paired = [p / c for p, c in zip(block_medians["python memset"], block_medians["cpp"])]
    print(f"membridge publish_host: Python vs C++ on {device.name} (device {args.device}), {args.blocks} interleaved "
          f"blocks of {args.frames} frames after {args.warmup} warm-up, {args.slots} slots of {args.slot_bytes} bytes; "
          f"per frame acquire + memset + release + publish_frame, no subscriber; every slot checked; "
          f"both paths pinned to CPUs {cpus}")
    print(f"  {'path':<14} {'host us (median of block medians)':>34} {'block medians':>40}")
    for k in paths:
        print(f"  {k:<14} {statistics.median(block_medians[k]):>34.3f} "
              f"{' '.join(f'{v:.2f}' for v in block_medians[k]):>40}")
    print(f"  ratio python memset / cpp: {ratio:.3f} (paired blocks: {' '.join(f'{r:.3f}' for r in paired)}); "
          f"python torch / cpp: {statistics.median(block_medians['python torch']) / cpp_median:.3f}")
    met = ratio <= 1.2
    print(f"\ngoals (reported, not enforced)\n  {'met    ' if met else 'NOT MET'}  Python / C++ host time per frame "
          f"<= 1.20: measured {ratio:.3f}")
    j = {"bench": "python_publish_host", "device": device.name, "device_uuid": device.uuid,
         "python": sys.version.split()[0], "torch": torch.__version__, "cupy": cupy.__version__,
         "config": {"frames": args.frames, "warmup": args.warmup, "blocks": args.blocks, "slots": args.slots,
                    "slot_bytes": args.slot_bytes, "quick": args.quick, "cpus": cpus},
         "cpp": {"block_medians_us": block_medians["cpp"], "last_run": cpp_json},
         "python_memset": {"host_us": stats(times["python memset"]), "block_medians_us": block_medians["python memset"]},
         "python_torch_fill": {"host_us": stats(times["python torch"]), "block_medians_us": block_medians["python torch"]},
         "paired_ratios": [round(r, 4) for r in paired],
         "goals": {"python_publish_host_time_ratio": {"comparison": "<=", "target": 1.2, "measured": round(ratio, 4),
                                                      "met": met}},
         "all_goals_met": met, "data_checked": True}
    line = json.dumps(j)
    print(line)
    if args.json:
        pathlib.Path(args.json).write_text(line + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"publish_host.py failed: {e}", file=sys.stderr)
        sys.exit(1)
