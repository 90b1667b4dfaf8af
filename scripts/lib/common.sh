# Shared by membridge's scripts: repository root, toolchain on PATH, and installing missing Debian
# packages when this is possible (root + apt-get), so a fresh machine needs no manual setup.

membridge_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

# Build dependencies, by Debian package name (third_party/README.md says what each is for).
MEMBRIDGE_BUILD_PACKAGES=(cmake ninja-build g++ libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
  libvulkan-dev libvulkan-volk-dev glslc libglm-dev libstb-dev libglfw3-dev libgl-dev libegl-dev libepoxy-dev)
# The windows tier: the mingw-w64 cross compiler (posix threads), Wine to run the tests, and
# GoogleTest's sources (built for Windows by the cross build).
MEMBRIDGE_WINDOWS_PACKAGES=(g++-mingw-w64-x86-64-posix wine64 googletest)
# The bounded fuzz run: clang with libFuzzer.
MEMBRIDGE_FUZZ_PACKAGES=(clang-16 libclang-rt-16-dev)  # clang 15+ has std::source_location
# What the vulkan tier runs on: the loader, Mesa's lavapipe and the Khronos validation layer.
MEMBRIDGE_VULKAN_TEST_PACKAGES=(libvulkan1 mesa-vulkan-drivers vulkan-validationlayers xvfb xauth  # xvfb, xauth: windowed demo test
  libegl1 libegl-mesa0 libgl1-mesa-dri)  # the gl tier: EGL surfaceless on Mesa llvmpipe

# The API reference (scripts/docs).
MEMBRIDGE_DOCS_PACKAGES=(doxygen)

membridge_use_cuda_toolkit() {
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  if ! command -v nvcc >/dev/null 2>&1; then
    echo "membridge: the CUDA toolkit (nvcc, cuda.h) is required; install it to /usr/local/cuda" >&2
    return 1
  fi
}

# membridge_ensure_packages PKG...: installs the missing ones with apt-get when running as root.
membridge_ensure_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "membridge: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "membridge: missing Debian packages: ${missing[*]} (install them, or run as root to let this script do it)" >&2
    return 1
  fi
}

# membridge_find_python 3.12: prints an interpreter of that CPython version (PATH, then pyenv).
membridge_find_python() {
  local v=$1 p
  for p in "$(command -v "python$v" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
    [ -n "$p" ] && [ -x "$p" ] && "$p" -c "import sys; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$v')" \
      2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}
