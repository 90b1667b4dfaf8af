#include <membridge/ipc/resource.hpp>

#include <string>

namespace membridge::ipc {

bool is_valid_resource_name(const std::string& name) noexcept {
  if (name.empty() || name.size() > max_name_size) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

std::string check(const buffer_description& d) {
  if (!is_valid_resource_name(d.name)) return "invalid name '" + d.name + "' (1-64 of [A-Za-z0-9._/-])";
  if (d.format.name.size() > max_name_size) return "format name longer than " + std::to_string(max_name_size) + " bytes";
  if (d.handles != handle_kind::opaque_fd && d.handles != handle_kind::opaque_win32) return "unknown handle kind";
  if (d.chunks.size() > max_chunks) return std::to_string(d.chunks.size()) + " chunks, more than " + std::to_string(max_chunks);
  std::uint64_t end = 0;
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    const buffer_chunk& c = d.chunks[i];
    if (c.size == 0) return "chunk " + std::to_string(i) + " has size 0";
    if (c.offset != end)
      return "chunk " + std::to_string(i) + " starts at " + std::to_string(c.offset) + ", not at " + std::to_string(end);
    if (c.size > d.reserved_size || end > d.reserved_size - c.size)
      return "chunk " + std::to_string(i) + " ends past the reserved size " + std::to_string(d.reserved_size);
    end += c.size;
  }
  if (d.size > end) return "size " + std::to_string(d.size) + " is more than the chunks hold (" + std::to_string(end) + ")";
  return {};
}

}  // namespace membridge::ipc
