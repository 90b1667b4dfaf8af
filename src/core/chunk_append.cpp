#include <membridge/core/chunk_append.hpp>

#include <string>

namespace membridge {

result<void> check_chunk_append(const char* call, std::size_t current_size, std::size_t reserved_size,
                                std::size_t offset, std::size_t size) {
  if (size == 0) return error(errc::invalid_argument, call, "chunk size is 0");
  if (offset != current_size)
    return error(errc::invalid_argument, call,
                 "chunks are appended in order: expected offset " + std::to_string(current_size) + ", got " +
                     std::to_string(offset));
  if (current_size > reserved_size || size > reserved_size - current_size)
    return error(errc::invalid_argument, call,
                 "the chunk would end at byte " + std::to_string(offset + size) + ", past the reserved " +
                     std::to_string(reserved_size));
  return ok();
}

}  // namespace membridge
