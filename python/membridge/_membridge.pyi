"""
membridge's C++ library, bound with nanobind (use the `membridge` package).
"""

from collections.abc import Sequence


class Error(RuntimeError):
    """
    A membridge error. str(e) is membridge's message; the attributes say more: category ('invalid_argument', 'os_error', ...), source ('cuda', 'os', 'vulkan', ...), native_code, native_name, call and context.
    """
    category: str
    source: str
    native_code: int
    native_name: str
    call: str
    context: str

class InvalidArgumentError(Error, ValueError):
    """The caller passed something unusable."""

class UnsupportedError(Error):
    """The device, driver or platform lacks a needed feature."""

class DriverUnavailableError(Error):
    """No usable driver: library missing, too old, stub, or no device."""

class OutOfMemoryError(Error):
    """Device/host memory or a reserved address range is exhausted."""

class DeviceLostError(Error):
    """The GPU faulted or was lost; the context is unusable."""

class SystemCallError(Error, OSError):
    """A system call failed (errno in native_code)."""

class ProtocolError(Error):
    """A peer sent something malformed."""

class WaitTimeoutError(Error, TimeoutError):
    """A wait ran out of time."""

class InternalError(Error):
    """A bug or an unexpected driver answer; please report it."""

class Device:
    """
    A CUDA device opened for membridge (retains its primary context: PyTorch, CuPy and membridge see the same memory). Raises DriverUnavailableError without a usable driver.
    """

    def __init__(self, ordinal: int = 0) -> None:
        """Opens CUDA device `ordinal` (CUDA's numbering)."""

    @staticmethod
    def count() -> int:
        """The number of CUDA devices."""

    @property
    def ordinal(self) -> int:
        """CUDA's ordinal."""

    @property
    def name(self) -> str:
        """The marketing name."""

    @property
    def uuid(self) -> str:
        """The device UUID (equal to Vulkan's deviceUUID for the same GPU)."""

    @property
    def pci_bus_id(self) -> str:
        """The PCI bus id."""

    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor)."""

    @property
    def total_memory(self) -> int:
        """Bytes of device memory."""

    @property
    def granularity(self) -> int:
        """Every VMM chunk size and offset is a multiple of this (2 MiB on H100)."""

    def memory(self) -> tuple[int, int]:
        """(free, total) bytes now."""

    def synchronize(self) -> None:
        """Waits for all work queued in the primary context."""

    def __repr__(self) -> str: ...

class GrowableBuffer:
    """
    Device memory at a fixed address that grows without copies, seen as an array of shape (rows, *row_shape). PyTorch (torch.as_tensor(buf, device='cuda'), torch.from_dlpack(buf)), CuPy (cupy.asarray(buf)), Numba and Warp see the same memory through __cuda_array_interface__ and DLPack. grow() keeps the address: make a new view to see the new rows.
    """

    def __init__(self, device: Device, shape: Sequence[int], dtype: str = 'float32', *, max_rows: int | None = None, max_bytes: int | None = None, growth_factor: float = 2.0, max_chunk: int = 0) -> None:
        """
        Reserves max_rows rows (or max_bytes) of addresses and maps shape[0] rows of dtype elements.
        """

    @property
    def shape(self) -> tuple: ...

    @property
    def dtype(self) -> str: ...

    @property
    def rows(self) -> int:
        """The first dimension."""

    @property
    def row_bytes(self) -> int:
        """Bytes per row (the element stride of a published layout)."""

    @property
    def ptr(self) -> int:
        """The device address; fixed for the buffer's life."""

    @property
    def device(self) -> int:
        """The CUDA ordinal."""

    @property
    def size(self) -> int:
        """Bytes in use."""

    @property
    def capacity(self) -> int:
        """Bytes mapped."""

    @property
    def max_size(self) -> int:
        """Bytes reserved."""

    @property
    def chunk_count(self) -> int: ...

    def grow(self, rows: int) -> None:
        """
        Grows to `rows` rows in place (same address, contents kept, new rows uninitialised).
        """

    def shrink(self, rows: int) -> None:
        """
        Shrinks to `rows` rows; unmaps whole chunks past them (views of those rows become invalid).
        """

    def reserve(self, rows: int) -> None:
        """
        Maps memory for `rows` rows ahead of need (like list reservation); rows stays.
        """

    @property
    def __cuda_array_interface__(self) -> dict: ...

    def __dlpack__(self, *args, **kwargs) -> object:
        """
        A DLPack capsule of the rows in use (stream is accepted and not used: order your work yourself).
        """

    def __dlpack_device__(self) -> tuple[int, int]: ...

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

class ImportedBuffer:
    """
    A buffer another process published, mapped into this one (Subscriber.import_buffer); an array of shape (rows, *row_shape) like GrowableBuffer. follow() brings it in step with the publisher's growth.
    """

    @property
    def shape(self) -> tuple: ...

    @property
    def dtype(self) -> str: ...

    @property
    def rows(self) -> int: ...

    @property
    def ptr(self) -> int: ...

    @property
    def device(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def capacity(self) -> int: ...

    @property
    def reserved_size(self) -> int: ...

    @property
    def __cuda_array_interface__(self) -> dict: ...

    def __dlpack__(self, *args, **kwargs) -> object: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...

    def __len__(self) -> int: ...

class BufferDescription:
    """A published buffer as its publisher describes it."""

    @property
    def name(self) -> str: ...

    @property
    def device_uuid(self) -> str: ...

    @property
    def layout(self) -> str:
        """The element layout string (membridge.layout)."""

    @property
    def stride(self) -> int:
        """Bytes per element."""

    @property
    def size(self) -> int: ...

    @property
    def reserved_size(self) -> int: ...

    @property
    def generation(self) -> int: ...

    @property
    def chunks(self) -> list[tuple[int, int]]:
        """(offset, size) of every chunk, in order."""

class Event:
    """Something a publisher told a subscriber."""

    @property
    def kind(self) -> str:
        """
        'buffer_added', 'buffer_changed', 'semaphore_added', 'frame' or 'disconnected'.
        """

    @property
    def name(self) -> str: ...

    @property
    def frame(self) -> int: ...

    @property
    def generation(self) -> int: ...

    @property
    def reason(self) -> str: ...

    def __repr__(self) -> str: ...

class Publisher:
    """
    Shares named buffers (chunk fds with a description) with other processes over a Unix socket and announces frames. Low level: any fds (e.g. os.memfd_create), no GPU.
    """

    def __init__(self, name: str | None = None, *, path: str | None = None, publisher_name: str = '', max_consumers: int = 1) -> None:
        """Listens on $XDG_RUNTIME_DIR/membridge/<name>.sock (or `path`)."""

    def publish_buffer(self, name: str, fds: Sequence[int], chunk_sizes: Sequence[int], *, size: int | None = None, reserved_size: int | None = None, layout: str = '', stride: int = 0) -> None:
        """
        Publishes a buffer made of chunks (one fd each, back to back from offset 0) with its element layout (membridge.layout) and stride. The fds are duplicated: the caller keeps its own.
        """

    def update_buffer(self, name: str, size: int, new_fds: Sequence[int] = [], new_chunk_sizes: Sequence[int] = []) -> None:
        """
        Announces that a published buffer's size changed, with the fds of chunks added after its last one.
        """

    def announce_frame(self, frame: int) -> None:
        """Announces frame `frame` (frames must increase)."""

    @property
    def subscriber_count(self) -> int: ...

    @property
    def consumer_count(self) -> int: ...

    @property
    def last_frame(self) -> int | None: ...

    @property
    def path(self) -> str:
        """The socket file subscribers connect to."""

    @property
    def valid(self) -> bool: ...

    def stop(self) -> None:
        """
        Says goodbye to every subscriber and closes (subscribers keep what they received).
        """

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

class Subscriber:
    """
    A connection to a publisher: the buffers it published (descriptions and fds), their growth and its frames. import_buffer() maps a buffer into CUDA as an array.
    """

    def __init__(self, name: str | None = None, *, path: str | None = None, role: str = 'observer', client_name: str = '', timeout: float = 5.0) -> None:
        """Connects and receives the publisher's current state."""

    def next_event(self, timeout: float = 1.0) -> Event | None:
        """
        The next event (its buffer changes already applied), or None when nothing happened within `timeout` s.
        """

    def buffer(self, name: str) -> BufferDescription | None:
        """The description of buffer `name`, or None."""

    def buffer_fds(self, name: str) -> list[int]:
        """
        New duplicates of buffer `name`'s chunk fds, in chunk order: the caller owns and closes them.
        """

    def buffer_names(self) -> list[str]: ...

    def follow(self, view: ImportedBuffer, name: str) -> bool:
        """
        Brings an ImportedBuffer of buffer `name` in step with its growth; True when it changed.
        """

    @property
    def last_frame(self) -> int | None: ...

    @property
    def frame_at_join(self) -> int | None: ...

    @property
    def role(self) -> str: ...

    @property
    def publisher_name(self) -> str: ...

    @property
    def publisher_pid(self) -> int: ...

    @property
    def connected(self) -> bool: ...

    def fileno(self) -> int:
        """
        The socket (readable: call next_event), for select/poll. Owned by the subscriber.
        """

    def disconnect(self) -> None:
        """Says goodbye; received state and fds stay."""

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

class FramePublisher:
    """
    A CUDA producer's frames shared with viewer processes (membridge-view --name NAME): publishes GrowableBuffers with their element layout and a frame timeline of `slots` slots (frame f writes slot f % slots). Per frame: acquire(stream, f); your kernels on `stream`; release(stream, f); publish_frame(f). Viewers that consume pace the producer on the GPU; nothing waits on the host.
    """

    def __init__(self, device: Device, name: str | None = None, *, path: str | None = None, slots: int = 3, max_consumers: int = 8, timeline_name: str = 'frames', publisher_name: str = '') -> None:
        """
        Makes a Vulkan context on the device's GPU, the frame timeline, and listens on $XDG_RUNTIME_DIR/membridge/<name>.sock (or `path`).
        """

    def publish_buffer(self, name: str, buffer: GrowableBuffer, layout: str = '', stride: int | None = None) -> None:
        """
        Publishes `buffer` under `name` with its element layout (membridge.layout; stride defaults to the buffer's row bytes). With a timeline, a buffer holds `slots` slots of size / slots bytes.
        """

    def publish_growth(self, name: str, buffer: GrowableBuffer) -> None:
        """Tells subscribers that `buffer` (published as `name`) grew or shrank."""

    def acquire(self, stream: object, frame: int) -> None:
        """
        Enqueues on `stream` a wait until frame's slot is free (consumers are done with it).
        """

    def release(self, stream: object, frame: int) -> None:
        """Enqueues on `stream` the signal that frame `frame` is written."""

    def publish_frame(self, frame: int) -> None:
        """
        Announces frame `frame` to subscribers (after release was enqueued for it).
        """

    def drain(self, timeout: float = 5.0) -> None:
        """
        For a producer that stops: after its stream finished, waits until consumers drew the last frame.
        """

    def wait_consumed(self, frame: int, timeout: float = 5.0) -> bool:
        """
        Waits on the host (the GIL released) until every current consumer is done with frame `frame` (at once when none consumes); False after `timeout` seconds. A producer that calls it for frame f - slots before acquire(stream, f) never runs more than `slots` frames ahead of its viewers, as sample 03's C++ producer does: the GPU wait acquire enqueues is then already satisfied, so the viewers and the simulation do not stall each other on the GPU.
        """

    @property
    def slots(self) -> int: ...

    def slot(self, frame: int) -> int:
        """The slot frame `frame` writes (frame % slots)."""

    @property
    def subscriber_count(self) -> int: ...

    @property
    def consumer_count(self) -> int: ...

    @property
    def path(self) -> str:
        """The socket file subscribers connect to."""

    @property
    def vulkan_device(self) -> str:
        """The Vulkan device the timeline's semaphores live on."""

    def close(self) -> None:
        """
        Stops publishing (subscribers see goodbye) and destroys the timeline (drain first).
        """

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...
