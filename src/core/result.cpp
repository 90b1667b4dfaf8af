#include <membridge/core/log.hpp>
#include <membridge/core/result.hpp>

#include <cstdlib>
#include <string>

namespace membridge::detail {

void bad_result_access(const error& e) noexcept {
  std::string text = "membridge: value() called on a result that holds an error (a caller bug): ";
  text += e.message();
  log(log_level::error, text);
  std::abort();
}

}  // namespace membridge::detail
