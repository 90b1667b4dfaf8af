// membridge/core/chunk_append.hpp: the rule every chunked view (Vulkan's, GL's) follows when a chunk is
// appended: chunks come in order, contiguous from offset 0, inside the reserved size.
#pragma once

#include <membridge/core/result.hpp>

#include <cstddef>

namespace membridge {

/// Checks that a chunk of `size` bytes at `offset` may be appended to a view that holds `current_size`
/// bytes of `reserved_size`. Errors: invalid_argument (raised as `call`) for size 0, an offset other
/// than current_size, or a chunk ending past reserved_size; the message gives the numbers.
[[nodiscard]] result<void> check_chunk_append(const char* call, std::size_t current_size, std::size_t reserved_size,
                                              std::size_t offset, std::size_t size);

}  // namespace membridge
