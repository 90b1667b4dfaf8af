// Fixture: plants a public sync header storing a cuda detail type (must be reported).
#pragma once
#include <memory>
namespace membridge::sync {
class stores_detail {
  std::shared_ptr<const cuda::detail::device_state> device_;
};
}  // namespace membridge::sync
