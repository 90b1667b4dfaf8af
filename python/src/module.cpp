// python/src/module.cpp: membridge._membridge, the extension module behind the `membridge` package.
#include "errors.hpp"
#include "objects.hpp"

namespace nb = nanobind;

NB_MODULE(_membridge, m) {
  m.doc() = "membridge's C++ library, bound with nanobind (use the `membridge` package).";
  membridge::python::register_errors(m);
  membridge::python::bind_cuda(m);
  membridge::python::bind_ipc(m);
  membridge::python::bind_frames(m);
}
