// python/src/objects.hpp: the C++ objects behind membridge's Python classes, shared by the binding
// files (a Python Device, GrowableBuffer or ImportedBuffer holds one of these).
#pragma once

#include "arrays.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include <nanobind/nanobind.h>

namespace membridge::python {

/// membridge.Device: an opened CUDA device. Ownership: owns its share of the device state.
struct py_device {
  cuda::device device;
};

/// membridge.GrowableBuffer: a growable_buffer seen as rows of a typed array.
/// Ownership: owns the buffer (its range and chunks).
struct py_growable_buffer {
  cuda::growable_buffer buffer;
  array_layout layout;
  int ordinal = 0;
  /// Rows in use (size() / row bytes).
  [[nodiscard]] std::size_t rows() const noexcept { return buffer.size() / layout.row_bytes(); }
};

/// membridge.ImportedBuffer: another process's published buffer mapped into this one.
/// Ownership: owns the import (its range and mapped chunks; the chunks' memory stays alive while it lives).
struct py_imported_buffer {
  cuda::imported_buffer buffer;
  array_layout layout;
  int ordinal = 0;
  /// Whole rows within size().
  [[nodiscard]] std::size_t rows() const noexcept { return buffer.size() / layout.row_bytes(); }
};

/// Binds Device, GrowableBuffer and ImportedBuffer.
void bind_cuda(nanobind::module_& m);
/// Binds the low-level Publisher and Subscriber (any fds; no GPU).
void bind_ipc(nanobind::module_& m);
/// Binds FramePublisher (a CUDA producer's frame timeline and buffers shared with viewers).
void bind_frames(nanobind::module_& m);

}  // namespace membridge::python
