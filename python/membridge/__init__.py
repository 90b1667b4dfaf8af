"""membridge: CUDA memory that grows in place and is shared without copies with PyTorch, CuPy, Numba
and Warp (DLPack, ``__cuda_array_interface__``), with Vulkan viewers (membridge-view) and with other
processes. A thin layer over membridge's C++ library; see docs/python.md.

Errors raise :class:`Error` subclasses (one per membridge error category) carrying membridge's
message. Importing never needs a GPU: the CUDA driver is loaded when a Device is opened.
"""
from __future__ import annotations

from . import layout
from ._membridge import (
    BufferDescription,
    Device,
    DeviceLostError,
    DriverUnavailableError,
    Error,
    Event,
    FramePublisher,
    GrowableBuffer,
    ImportedBuffer,
    InternalError,
    InvalidArgumentError,
    OutOfMemoryError,
    ProtocolError,
    Publisher,
    SystemCallError,
    UnsupportedError,
    WaitTimeoutError,
)
from ._membridge import Subscriber as _Subscriber

__version__ = "0.2.0"

__all__ = [
    "BufferDescription", "Device", "DeviceLostError", "DriverUnavailableError", "Error", "Event",
    "FramePublisher", "GrowableBuffer", "ImportedBuffer", "InternalError", "InvalidArgumentError",
    "OutOfMemoryError", "ProtocolError", "Publisher", "Subscriber", "SystemCallError", "UnsupportedError",
    "WaitTimeoutError", "layout",
]


class Subscriber(_Subscriber):
    """A connection to a publisher (see the base class); import_buffer() maps a published buffer into
    CUDA as an array typed by its layout (membridge.layout.array_layout) unless dtype is given."""

    def import_buffer(self, device: Device, name: str, dtype: str | None = None,
                      row_shape: tuple[int, ...] | None = None) -> ImportedBuffer:
        """Maps buffer ``name`` into this process on ``device`` (torch.as_tensor(view, device="cuda"),
        cupy.asarray(view) and torch.from_dlpack(view) see it). Without ``dtype`` the element type and row
        shape come from the published layout and stride."""
        description = self.buffer(name)
        if description is None:  # the C++ call raises membridge's error for the unknown name
            return self._import_buffer(device, name, "uint8", [])
        if dtype is None:
            dtype, default_shape = layout.array_layout(description.layout, description.stride)
            row_shape = default_shape if row_shape is None else row_shape
        return self._import_buffer(device, name, str(dtype), list(row_shape or ()))
