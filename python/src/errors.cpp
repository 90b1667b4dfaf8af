// python/src/errors.cpp: membridge.Error and its subclasses, one per membridge::errc.
#include "errors.hpp"

#include <array>
#include <cstddef>
#include <string>

namespace nb = nanobind;

namespace membridge::python {

namespace {

struct error_class {
  errc code;
  const char* name;     // the Python class name
  PyObject* extra_base; // a builtin exception it also derives from (or nullptr)
  const char* doc;
};

// The classes, in errc order (errc values start at 1).
const std::array<error_class, 9>& error_classes() {
  static const std::array<error_class, 9> classes{{
      {errc::invalid_argument, "InvalidArgumentError", PyExc_ValueError, "The caller passed something unusable."},
      {errc::unsupported, "UnsupportedError", nullptr, "The device, driver or platform lacks a needed feature."},
      {errc::driver_unavailable, "DriverUnavailableError", nullptr,
       "No usable driver: library missing, too old, stub, or no device."},
      {errc::out_of_memory, "OutOfMemoryError", nullptr, "Device/host memory or a reserved address range is exhausted."},
      {errc::device_lost, "DeviceLostError", nullptr, "The GPU faulted or was lost; the context is unusable."},
      {errc::os_error, "SystemCallError", PyExc_OSError, "A system call failed (errno in native_code)."},
      {errc::protocol_error, "ProtocolError", nullptr, "A peer sent something malformed."},
      {errc::timeout, "WaitTimeoutError", PyExc_TimeoutError, "A wait ran out of time."},
      {errc::internal, "InternalError", nullptr, "A bug or an unexpected driver answer; please report it."},
  }};
  return classes;
}

PyObject* base_class = nullptr;                 // membridge.Error
std::array<PyObject*, 9> category_classes{};   // by errc value - 1

PyObject* class_for(errc code) {
  const auto index = static_cast<std::size_t>(code) - 1;
  if (index < category_classes.size() && category_classes[index] != nullptr) return category_classes[index];
  return base_class;
}

void set_attribute(PyObject* object, const char* name, nb::object value) {
  if (PyObject_SetAttrString(object, name, value.ptr()) != 0) throw nb::python_error();
}

}  // namespace

void register_errors(nb::module_& m) {
  base_class = PyErr_NewExceptionWithDoc("membridge._membridge.Error",
                                         "A membridge error. str(e) is membridge's message; the attributes say more: category "
                                         "('invalid_argument', 'os_error', ...), source ('cuda', 'os', 'vulkan', ...), "
                                         "native_code, native_name, call and context.",
                                         PyExc_RuntimeError, nullptr);
  if (base_class == nullptr) throw nb::python_error();
  m.attr("Error") = nb::handle(base_class);
  for (const error_class& c : error_classes()) {
    nb::object bases = c.extra_base != nullptr ? nb::object(nb::make_tuple(nb::handle(base_class), nb::handle(c.extra_base)))
                                               : nb::object(nb::make_tuple(nb::handle(base_class)));
    const std::string qualified = std::string("membridge._membridge.") + c.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
    if (cls == nullptr) throw nb::python_error();
    category_classes[static_cast<std::size_t>(c.code) - 1] = cls;
    m.attr(c.name) = nb::handle(cls);
  }
}

void raise(const error& e) {
  nb::gil_scoped_acquire gil;  // errors may come from calls that released the GIL
  const std::string text = e.message();
  nb::object instance = nb::steal(PyObject_CallOneArg(class_for(e.code()), nb::str(text.c_str(), text.size()).ptr()));
  if (!instance.is_valid()) throw nb::python_error();
  set_attribute(instance.ptr(), "category", nb::str(std::string(to_string(e.code())).c_str()));
  set_attribute(instance.ptr(), "source", nb::str(std::string(to_string(e.source())).c_str()));
  set_attribute(instance.ptr(), "native_code", nb::int_(e.native_code()));
  set_attribute(instance.ptr(), "native_name", nb::str(std::string(e.native_name()).c_str()));
  set_attribute(instance.ptr(), "call", nb::str(std::string(e.call()).c_str()));
  set_attribute(instance.ptr(), "context", nb::str(std::string(e.context()).c_str()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
  throw nb::python_error();
}

void raise_invalid_argument(const char* call, const std::string& text, std::source_location where) {
  raise(error(errc::invalid_argument, call, text, where));
}

}  // namespace membridge::python
