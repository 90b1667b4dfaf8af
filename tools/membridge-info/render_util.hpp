// membridge-info's rendering helpers, shared by the CUDA, Vulkan and GL sections: aligned text rows,
// the JSON form of an error and of a struct's plain members.
#pragma once

#include <membridge/core/error.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace membridge::info::detail {

using json = nlohmann::ordered_json;

/// The column where row values start.
inline constexpr std::size_t value_column = 32;

/// Appends "<indent><label>:" padded to value_column, then `value` and a newline.
inline void row(std::string& out, std::string_view indent, std::string_view label, std::string_view value) {
  std::string head = std::string(indent) + std::string(label) + ":";
  if (head.size() < value_column) head.resize(value_column, ' ');
  else head += ' ';
  out += head;
  out += value;
  out += '\n';
}

/// "yes" or "no".
inline std::string yes_no(bool value) { return value ? "yes" : "no"; }

/// Two rows: the error's category under `label`, its message under "detail".
inline void error_rows(std::string& out, std::string_view indent, std::string_view label, const error& e) {
  row(out, indent, label, to_string(e.code()));
  row(out, indent, "detail", e.message());
}

/// ERROR = { "category": string, "message": string }, or null.
inline json json_of(const std::optional<error>& e) {
  if (!e) return nullptr;
  json j = json::object();
  j["category"] = std::string(to_string(e->code()));
  j["message"] = e->message();
  return j;
}

/// A plain member of `T` (a bool, number or string) and its key in the JSON report.
template <class T, class M>
struct json_field {
  const char* key;  ///< The JSON key.
  M T::*member;     ///< The member written under it.
};

/// The JSON object { key: value.*member, ... } of `fields`, in their order.
template <class T, class... M>
json fields_json(const T& value, const json_field<T, M>&... fields) {
  json j = json::object();
  ((j[fields.key] = value.*fields.member), ...);
  return j;
}

/// The text, or null when it is empty (a value the driver did not report).
inline json text_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

}  // namespace membridge::info::detail
