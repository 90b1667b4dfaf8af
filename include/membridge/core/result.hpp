// membridge/core/result.hpp: result<T>, a value or an error, with std::expected's member names.
#pragma once

#include <membridge/core/error.hpp>

#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace membridge {

namespace detail {
/// Reports a value() call on an error result (a caller bug) to the log, then aborts.
[[noreturn]] void bad_result_access(const error& e) noexcept;
}  // namespace detail

/// Either a T or an error. Member names follow C++23 std::expected so a later switch is mechanical.
/// No exceptions: value() on an error is a programming bug that logs the error and aborts; check
/// has_value() (or use MEMBRIDGE_TRY / MEMBRIDGE_TRY_ASSIGN) first.
template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_reference_v<T>, "result<T&> is not supported");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, membridge::error>, "result<error> is ambiguous");

 public:
  /// The type of the value held on success.
  using value_type = T;
  /// The type of the error held on failure.
  using error_type = membridge::error;

  /// A successful result holding `value`.
  template <class U = T,
            std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, result> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, membridge::error>,
                             int> = 0>
  result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT(implicit)

  /// A failed result holding `e`.
  result(membridge::error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT(implicit)

  /// A result not set yet: holds errc::internal ("no value or error was stored"), so a result declared
  /// before a thread fills it in (`result<T> r; std::thread t([&] { r = work(); });`) reads as a failure,
  /// never as a value, if nothing was assigned. (result<void>() is a success, as before.)
  result() : v_(std::in_place_index<1>, membridge::error(errc::internal, "result", "not set: no value or error was stored")) {}

  /// True when a value is held.
  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  /// Same as has_value().
  explicit operator bool() const noexcept { return has_value(); }

  /// The value; aborts (after logging the error) if this holds an error.
  [[nodiscard]] T& value() & { check(); return *std::get_if<0>(&v_); }
  /// The value; aborts (after logging the error) if this holds an error.
  [[nodiscard]] const T& value() const& { check(); return *std::get_if<0>(&v_); }
  /// The value, moved out; aborts (after logging the error) if this holds an error.
  [[nodiscard]] T&& value() && { check(); return std::move(*std::get_if<0>(&v_)); }

  /// The value. Precondition: has_value().
  [[nodiscard]] T& operator*() & { return value(); }
  /// The value. Precondition: has_value().
  [[nodiscard]] const T& operator*() const& { return value(); }
  /// The value, moved out. Precondition: has_value().
  [[nodiscard]] T&& operator*() && { return std::move(*this).value(); }
  /// Member access to the value. Precondition: has_value().
  [[nodiscard]] T* operator->() { return &value(); }
  /// Member access to the value. Precondition: has_value().
  [[nodiscard]] const T* operator->() const { return &value(); }

  /// The error. Precondition: !has_value().
  [[nodiscard]] membridge::error& error() & { return *std::get_if<1>(&v_); }
  /// The error. Precondition: !has_value().
  [[nodiscard]] const membridge::error& error() const& { return *std::get_if<1>(&v_); }
  /// The error, moved out. Precondition: !has_value().
  [[nodiscard]] membridge::error&& error() && { return std::move(*std::get_if<1>(&v_)); }

  /// The value, or `fallback` converted to T when this holds an error.
  template <class U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    return has_value() ? *std::get_if<0>(&v_) : static_cast<T>(std::forward<U>(fallback));
  }

  /// Adds outer context to a held error; a held value passes through unchanged. Returns a new
  /// result (by value, so `MEMBRIDGE_TRY(f().with_context(...))` never refers to a dead temporary).
  [[nodiscard]] result with_context(std::string_view outer) && {
    if (!has_value()) error().add_context(outer);
    return std::move(*this);
  }

 private:
  void check() const {
    if (!has_value()) detail::bad_result_access(*std::get_if<1>(&v_));
  }

  std::variant<T, membridge::error> v_;
};

/// Success without a value, or an error.
template <>
class [[nodiscard]] result<void> {
 public:
  /// No value on success.
  using value_type = void;
  /// The type of the error held on failure.
  using error_type = membridge::error;

  /// Success.
  result() noexcept = default;
  /// A failed result holding `e`.
  result(membridge::error e) : e_(std::move(e)) {}  // NOLINT(implicit)

  /// True on success.
  [[nodiscard]] bool has_value() const noexcept { return !e_.has_value(); }
  /// Same as has_value().
  explicit operator bool() const noexcept { return has_value(); }
  /// Aborts (after logging the error) if this holds an error; otherwise does nothing.
  void value() const {
    if (e_) detail::bad_result_access(*e_);
  }

  /// The error. Precondition: !has_value().
  [[nodiscard]] membridge::error& error() & { return *e_; }
  /// The error. Precondition: !has_value().
  [[nodiscard]] const membridge::error& error() const& { return *e_; }
  /// The error, moved out. Precondition: !has_value().
  [[nodiscard]] membridge::error&& error() && { return std::move(*e_); }

  /// Adds outer context to a held error. Returns a new result (by value).
  [[nodiscard]] result with_context(std::string_view outer) && {
    if (e_) e_->add_context(outer);
    return std::move(*this);
  }

 private:
  std::optional<membridge::error> e_;
};

/// A successful result<void>, for `return membridge::ok();`.
[[nodiscard]] inline result<void> ok() noexcept { return {}; }

}  // namespace membridge

#define MEMBRIDGE_CONCAT_INNER_(a, b) a##b
#define MEMBRIDGE_CONCAT_(a, b) MEMBRIDGE_CONCAT_INNER_(a, b)

/// Evaluates a result-returning expression; on error returns the error from the enclosing function
/// (whose return type must be a result<...>).
#define MEMBRIDGE_TRY(...)                                               \
  do {                                                                   \
    auto&& membridge_try_result_ = (__VA_ARGS__);                        \
    if (!membridge_try_result_) return std::move(membridge_try_result_).error(); \
  } while (false)

/// Evaluates a result-returning expression; on error returns it, else assigns the value to `lhs`,
/// which may be a declaration: `MEMBRIDGE_TRY_ASSIGN(auto dev, cuda::device::open(0));`
#define MEMBRIDGE_TRY_ASSIGN(lhs, ...) \
  MEMBRIDGE_TRY_ASSIGN_IMPL_(MEMBRIDGE_CONCAT_(membridge_try_tmp_, __LINE__), lhs, __VA_ARGS__)

#define MEMBRIDGE_TRY_ASSIGN_IMPL_(tmp, lhs, ...)       \
  auto tmp = (__VA_ARGS__);                             \
  if (!tmp) return std::move(tmp).error();              \
  lhs = std::move(tmp).value()
