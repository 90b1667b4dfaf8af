#include <membridge/core/units.hpp>

#include <array>
#include <cstdio>

namespace membridge {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> units{"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  std::size_t unit = 0;
  std::uint64_t scale = 1024;
  while (unit + 1 < units.size() && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  char number[40];
  std::snprintf(number, sizeof number, "%.2f", static_cast<double>(bytes) / static_cast<double>(scale));
  std::string text = number;
  while (text.back() == '0') text.pop_back();  // "1.50" -> "1.5", "64.00" -> "64."
  if (text.back() == '.') text.pop_back();
  return text + ' ' + units[unit];
}

}  // namespace membridge
