"""membridge's Python package on a GPU: tensors and buffers share one device pointer (PyTorch, CuPy),
growth keeps the pointer and the data, and a FramePublisher in one process reaches a Subscriber in
another that imports the buffer as a torch tensor. Marked `gpu` (see conftest.py)."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import membridge

pytestmark = pytest.mark.gpu
HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def torch():
    import torch as t  # the GPU machine has it; a missing import fails the test
    assert t.cuda.is_available(), "torch sees no CUDA device"
    return t


@pytest.fixture(scope="module")
def device():
    return membridge.Device(0)


def test_torch_sees_the_buffers_memory_through_both_protocols(torch, device):
    buf = membridge.GrowableBuffer(device, (1000, 4), "float32", max_rows=1 << 20)
    assert buf.shape == (1000, 4) and buf.dtype == "float32" and buf.size == 16000
    # Read directly: torch.as_tensor falls back to DLPack when the property raises.
    cai = buf.__cuda_array_interface__
    assert cai["typestr"] == "<f4" and cai["shape"] == (1000, 4) and cai["data"] == (buf.ptr, False)
    a = torch.as_tensor(buf, device="cuda")       # __cuda_array_interface__
    b = torch.from_dlpack(buf)                    # DLPack
    assert a.data_ptr() == buf.ptr == b.data_ptr()
    assert a.shape == b.shape == (1000, 4) and a.dtype == b.dtype == torch.float32
    a.copy_(torch.arange(4000, dtype=torch.float32, device="cuda").reshape(1000, 4))
    torch.cuda.synchronize()
    assert torch.equal(b, a) and b[999, 3].item() == 3999.0
    assert buf.__dlpack_device__() == (2, device.ordinal)


@pytest.fixture(scope="module")
def cupy():
    if os.environ.get("MEMBRIDGE_REQUIRE_GPU") == "1":
        import cupy as c  # the GPU machine has it: a missing import fails
        return c
    return pytest.importorskip("cupy")


def test_cupy_sees_the_same_pointer_and_data(torch, cupy, device):
    buf = membridge.GrowableBuffer(device, (256,), "int32", max_rows=1 << 20)
    c = cupy.asarray(buf)
    assert c.data.ptr == buf.ptr and c.shape == (256,) and c.dtype == cupy.int32
    c[:] = cupy.arange(256, dtype=cupy.int32) * 3
    cupy.cuda.runtime.deviceSynchronize()
    t = torch.from_dlpack(buf)
    assert t.data_ptr() == buf.ptr and t[255].item() == 765
    d = cupy.from_dlpack(buf)
    assert d.data.ptr == buf.ptr and int(d.sum()) == 3 * 255 * 256 // 2


def test_growth_keeps_the_pointer_and_the_data(torch, device):
    buf = membridge.GrowableBuffer(device, (1 << 16, 4), "float32", max_rows=1 << 24)
    before = torch.as_tensor(buf, device="cuda")
    pattern = torch.rand((1 << 16, 4), device="cuda")
    before.copy_(pattern)
    ptr, chunks = buf.ptr, buf.chunk_count
    buf.grow(1 << 21)  # 32 MiB: several times the first chunk
    assert buf.ptr == ptr and buf.rows == 1 << 21 and buf.chunk_count > chunks
    after = torch.as_tensor(buf, device="cuda")
    assert after.data_ptr() == ptr and after.shape == (1 << 21, 4)
    torch.cuda.synchronize()
    assert torch.equal(after[: 1 << 16], pattern)
    after[-1].fill_(7.0)  # the new rows are usable
    torch.cuda.synchronize()
    assert after[-1].sum().item() == 28.0
    with pytest.raises(membridge.OutOfMemoryError):
        buf.grow(1 << 25)  # past the reserved range
    assert buf.rows == 1 << 21 and buf.ptr == ptr


def test_buffer_argument_errors(device):
    with pytest.raises(membridge.InvalidArgumentError, match="unknown element type"):
        membridge.GrowableBuffer(device, (4,), "complex64", max_rows=8)
    with pytest.raises(membridge.InvalidArgumentError, match="exactly one of max_rows and max_bytes"):
        membridge.GrowableBuffer(device, (4,), "float32")
    buf = membridge.GrowableBuffer(device, (4,), "float32", max_rows=8)
    with pytest.raises(membridge.InvalidArgumentError):
        buf.grow(2)  # smaller than the size


def test_a_frame_publisher_reaches_a_subscriber_process_as_a_torch_tensor(torch, device, tmp_path):
    from gpu_publisher import slot_values

    seed, rows, slots = int.from_bytes(os.urandom(2), "little"), 1 << 15, 3
    path = str(tmp_path / "frames.sock")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen([sys.executable, str(HERE / "gpu_publisher.py"), path, str(seed), str(rows), str(slots)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "ready", f"publisher ended ({child.poll()})"
        sub = membridge.Subscriber(path=path, client_name="pytest gpu")
        d = sub.buffer("points")
        assert d.layout == "points:float4" and d.stride == 16 and d.size == rows * slots * 16
        assert d.device_uuid == device.uuid
        view = sub.import_buffer(device, "points")
        t = torch.as_tensor(view, device="cuda")
        assert t.shape == (rows * slots, 4) and t.dtype == torch.float32 and t.data_ptr() == view.ptr
        for f in range(1, 7):
            child.stdin.write(f"frame {f}\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "ok"
            e = sub.next_event(timeout=5.0)
            while e is not None and e.kind != "frame":
                e = sub.next_event(timeout=5.0)
            assert e is not None and e.frame == f
            s = f % slots
            assert torch.equal(t[s * rows:(s + 1) * rows], slot_values(seed, f, rows)), f"frame {f}"
        dl = torch.from_dlpack(view)
        assert dl.data_ptr() == t.data_ptr()
    finally:
        if child.poll() is None:
            child.stdin.write("stop\n")
            child.stdin.close()
        assert child.wait(timeout=60) == 0


def test_wait_consumed_returns_at_once_without_consumers_and_refuses_a_negative_timeout(torch, device, tmp_path):
    buf = membridge.GrowableBuffer(device, (3 * 64, 4), "float32", max_rows=3 * 64)
    t = torch.as_tensor(buf, device="cuda").view(3, 64, 4)
    with membridge.FramePublisher(device, path=str(tmp_path / "w.sock"), slots=3) as pub:
        pub.publish_buffer("points", buf, membridge.layout.points("float4"))
        stream = torch.cuda.Stream()
        for f in range(8):
            # Nobody consumes: the host wait is met at once, whatever the frame (the throttle never blocks).
            assert f < 3 or pub.wait_consumed(f - 3, 1.0) is True
            with torch.cuda.stream(stream):
                pub.acquire(stream.cuda_stream, f)
                t[f % 3].fill_(float(f))
                pub.release(stream.cuda_stream, f)
            pub.publish_frame(f)
        stream.synchronize()
        assert [t[s, 0, 0].item() for s in range(3)] == [6.0, 7.0, 5.0]
        with pytest.raises(ValueError):
            pub.wait_consumed(0, -1.0)
        pub.drain(5.0)
