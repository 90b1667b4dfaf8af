"""membridge's Python package without a GPU: import, errors, layouts, the stub, and a publisher and
subscriber over memfds in two processes (the CTest label `python` runs these in CI)."""
from __future__ import annotations

import ast
import mmap
import os
import pathlib
import subprocess
import sys

import pytest

import membridge
from memfd_publisher import CHUNKS, GROWTH, pattern

HERE = pathlib.Path(__file__).resolve().parent


# ------------------------------------------------------------------------------------- import ---

def test_the_package_imports_and_exports_its_api():
    for name in membridge.__all__:
        assert hasattr(membridge, name), name
    assert membridge._membridge.__file__.endswith(".so")


def test_errors_form_one_hierarchy_with_python_builtins_where_they_fit():
    assert issubclass(membridge.Error, RuntimeError)
    for cls in (membridge.InvalidArgumentError, membridge.UnsupportedError, membridge.DriverUnavailableError,
                membridge.OutOfMemoryError, membridge.DeviceLostError, membridge.SystemCallError,
                membridge.ProtocolError, membridge.WaitTimeoutError, membridge.InternalError):
        assert issubclass(cls, membridge.Error), cls
    assert issubclass(membridge.InvalidArgumentError, ValueError)
    assert issubclass(membridge.SystemCallError, OSError)
    assert issubclass(membridge.WaitTimeoutError, TimeoutError)


def test_the_type_stub_ships_parses_and_names_every_public_binding():
    stub = pathlib.Path(membridge.__file__).with_name("_membridge.pyi")
    assert stub.is_file(), f"{stub} is missing (python/tools/stubgen regenerates it)"
    tree = ast.parse(stub.read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    public = {n for n in dir(membridge._membridge) if not n.startswith("_")}
    assert public <= stubbed, f"not in the stub (run python/tools/stubgen): {sorted(public - stubbed)}"
    assert stubbed <= public, f"in the stub but not in the module: {sorted(stubbed - public)}"
    assert pathlib.Path(membridge.__file__).with_name("py.typed").is_file()


# ---------------------------------------------------------------------------- errors, no GPU ---

def test_device_errors_carry_membridges_message_and_category():
    try:
        count = membridge.Device.count()
    except membridge.DriverUnavailableError as e:  # this machine has no usable CUDA driver
        assert e.category == "driver_unavailable"
        assert "cu" in str(e).lower() and str(e) == e.args[0]
        with pytest.raises(membridge.DriverUnavailableError) as opened:
            membridge.Device(0)
        assert opened.value.category == "driver_unavailable" and str(opened.value)
        return
    assert count >= 1  # a GPU machine: opening past the last device is an invalid argument
    with pytest.raises(membridge.InvalidArgumentError) as e:
        membridge.Device(count + 7)
    assert e.value.category == "invalid_argument" and str(count + 7) in str(e.value)


def test_a_subscriber_without_publisher_raises_a_system_call_error(tmp_path):
    with pytest.raises(membridge.SystemCallError) as e:
        membridge.Subscriber(path=str(tmp_path / "nobody.sock"), timeout=0.5)
    assert e.value.category == "os_error" and e.value.source == "os"
    assert e.value.native_name.startswith(("ENOENT", "ECONNREFUSED")), e.value.native_name
    assert "nobody.sock" in str(e.value) or e.value.call


def test_publisher_argument_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(membridge.InvalidArgumentError, match="exactly one of name and path"):
        membridge.Publisher()
    with membridge.Publisher(path=str(tmp_path / "p.sock")) as pub:
        fd = os.memfd_create("x", os.MFD_CLOEXEC)
        os.ftruncate(fd, 4096)
        try:
            with pytest.raises(membridge.InvalidArgumentError, match="1 fds for 2 chunk sizes"):
                pub.publish_buffer("b", [fd], [4096, 4096])
            pub.publish_buffer("b", [fd], [4096], layout="points:float4", stride=16)
            with pytest.raises(membridge.InvalidArgumentError) as again:
                pub.publish_buffer("b", [fd], [4096])
            assert "b" in str(again.value) and again.value.category == "invalid_argument"
            pub.announce_frame(5)
            with pytest.raises(membridge.InvalidArgumentError):
                pub.announce_frame(5)
            with pytest.raises(membridge.InvalidArgumentError, match="no buffer named 'nope'"):
                pub.update_buffer("nope", 10)
        finally:
            os.close(fd)
        assert pub.last_frame == 5


# ----------------------------------------------------------------------------------- layouts ---

def test_layout_helpers_build_and_parse_the_shared_grammar():
    L = membridge.layout
    assert L.points("float4") == "points:float4"
    assert L.points("float3", "rgba8") == "points:float3,rgba8"
    assert L.image("rgba8", 640, 480) == "image:rgba8:640x480"
    assert L.heightfield(256, 128) == "heightfield:r32f:256x128"
    assert str(L.parse("points:float3,r32f")) == "points:float3,r32f"
    assert L.parse("image:r32f:8x4").width == 8 and L.parse("image:r32f:8x4").height == 4
    assert L.parse(L.PARTICLES_V1).min_stride == 32
    for bad in ("points:float2", "image:rgb8:1x1", "heightfield:r32f:0x3", "voxels:1", "points:float4,rgba8,r32f"):
        with pytest.raises(ValueError):
            L.parse(bad)
    with pytest.raises(ValueError):
        L.points("float2")
    assert L.array_layout("points:float4", 16) == ("float32", (4,))
    assert L.array_layout("points:float3", 0) == ("float32", (3,))
    assert L.array_layout("points:float3,rgba8", 16) == ("uint8", (16,))
    assert L.array_layout("image:rgba8:4x4", 4) == ("uint8", (4,))
    assert L.array_layout("heightfield:r32f:4x4", 4) == ("float32", ())
    assert L.array_layout(L.PARTICLES_V1, 32) == ("float32", (8,))
    assert L.array_layout("", 0) == ("uint8", ())
    with pytest.raises(ValueError, match="at least 16"):
        L.array_layout("points:float4", 12)


# ------------------------------------------------------------- two processes over memfds ---

class Child:
    """The publisher process, driven line by line."""

    def __init__(self, path: str, seed: int):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
        self.p = subprocess.Popen([sys.executable, str(HERE / "memfd_publisher.py"), path, str(seed)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self.read() == "ready"

    def read(self) -> str:
        line = self.p.stdout.readline().strip()
        assert line, f"the publisher process ended (status {self.p.poll()})"
        return line

    def send(self, command: str) -> str:
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.read()

    def stop(self) -> int:
        if self.p.poll() is None and not self.p.stdin.closed:
            self.p.stdin.write("stop\n")
            self.p.stdin.close()
        return self.p.wait(timeout=20)


def read_chunks(sub: membridge.Subscriber, name: str) -> list[bytes]:
    """Every chunk's bytes, through mmap of the subscriber's (duplicated) fds."""
    out = []
    fds = sub.buffer_fds(name)
    try:
        for fd, (_, size) in zip(fds, sub.buffer(name).chunks, strict=True):
            with mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ) as m:
                out.append(bytes(m[:size]))
    finally:
        for fd in fds:
            os.close(fd)
    return out


def next_of(sub: membridge.Subscriber, kind: str) -> membridge.Event:
    for _ in range(50):
        e = sub.next_event(timeout=0.2)
        if e is not None and e.kind == kind:
            return e
        assert e is None or e.kind in ("frame", "buffer_changed"), e
    raise AssertionError(f"no {kind} event")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_subscriber_in_this_process_sees_the_publishers_memfds_frames_and_growth(tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    path = str(tmp_path / "memfd.sock")
    fds_before = open_fds()
    child = Child(path, seed)
    try:
        sub = membridge.Subscriber(path=path, client_name="pytest", timeout=5.0)
        assert sub.connected and sub.role == "observer"
        assert sub.publisher_name == "pytest memfd publisher" and sub.publisher_pid == child.p.pid
        assert sub.buffer_names() == ["points"]
        d = sub.buffer("points")
        assert (d.layout, d.stride) == ("points:float4", 16)
        assert d.chunks == [(0, CHUNKS[0]), (CHUNKS[0], CHUNKS[1])]
        assert (d.size, d.reserved_size, d.generation) == (sum(CHUNKS) - 16, 1 << 20, 1)
        assert read_chunks(sub, "points") == [pattern(seed, i, s) for i, s in enumerate(CHUNKS)]
        assert sub.buffer("missing") is None
        with pytest.raises(membridge.InvalidArgumentError, match="no buffer named 'missing'"):
            sub.buffer_fds("missing")

        assert child.send("frame 1") == "ok" and child.send("frame 2") == "ok"
        assert [next_of(sub, "frame").frame, next_of(sub, "frame").frame] == [1, 2]
        assert child.send("grow") == "ok"
        changed = next_of(sub, "buffer_changed")
        assert (changed.name, changed.generation) == ("points", 2)
        d = sub.buffer("points")
        assert d.size == sum(CHUNKS) + GROWTH and d.chunks[-1] == (sum(CHUNKS), GROWTH)
        assert read_chunks(sub, "points")[-1] == pattern(seed, len(CHUNKS), GROWTH)
        assert child.send("frame 3") == "ok"
        assert next_of(sub, "frame").frame == 3 and sub.last_frame == 3
        assert sub.next_event(timeout=0.05) is None  # nothing more happened

        assert child.stop() == 0
        gone = next_of(sub, "disconnected")
        assert gone.reason and not sub.connected
        # The received fds outlive the publisher: the memory is still readable.
        assert read_chunks(sub, "points")[0] == pattern(seed, 0, CHUNKS[0])
        del sub
        child.p.stdout.close()
        assert open_fds() == fds_before, "the subscriber leaked fds"
    finally:
        child.stop()
