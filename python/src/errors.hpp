// python/src/errors.hpp: membridge errors raised as Python exceptions (membridge.Error and one
// subclass per errc), and helpers that unwrap a result<T> or raise.
#pragma once

#include <membridge/core/error.hpp>
#include <membridge/core/result.hpp>

#include <nanobind/nanobind.h>

#include <source_location>
#include <string>
#include <utility>

namespace membridge::python {

/// Creates membridge.Error and its subclasses in `m` (called once from the module's init).
void register_errors(nanobind::module_& m);

/// Raises the Python exception for `e`'s category with e.message() as its text and the error's
/// fields as attributes (category, source, native_code, native_name, call, context).
[[noreturn]] void raise(const error& e);

/// Raises a membridge.InvalidArgumentError with `text` (checks made by the bindings on Python input).
[[noreturn]] void raise_invalid_argument(const char* call, const std::string& text,
                                         std::source_location where = std::source_location::current());

/// The value of `r`, or raises its error.
template <class T>
T unwrap(result<T>&& r) {
  if (!r) raise(r.error());
  return std::move(r).value();
}

/// Raises `r`'s error, if any.
inline void check(const result<void>& r) {
  if (!r) raise(r.error());
}

}  // namespace membridge::python
