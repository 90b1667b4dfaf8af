#include <membridge/core/device_uuid.hpp>

#include <cstdio>

namespace membridge {

std::string device_uuid::to_string() const {
  std::string out;
  out.reserve(36);
  char hex[3];
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(bytes[i]));
    out += hex;
  }
  return out;
}

bool device_uuid::is_zero() const noexcept {
  for (const auto b : bytes)
    if (b != 0) return false;
  return true;
}

}  // namespace membridge
