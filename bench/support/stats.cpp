#include "stats.hpp"

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <utility>

namespace membridge::bench {

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

// A double for JSON: rounded, written as an integer for 0 decimals (byte counts), or null when it is
// not finite (JSON has no NaN or infinity).
json json_number(double value, int decimals) {
  if (!std::isfinite(value)) return nullptr;
  if (decimals <= 0 && std::fabs(value) < 9.0e18) return std::llround(value);
  return rounded(value, decimals);
}

}  // namespace

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return not_a_number;
  std::sort(values.begin(), values.end());
  // Position `fraction * (n - 1)` in the sorted sample; interpolate between its two neighbours.
  const double position = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double weight = position - static_cast<double>(below);
  return values[below] + (values[above] - values[below]) * weight;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return not_a_number;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

summary summarize(const std::vector<double>& values) {
  if (values.empty()) return {0, not_a_number, not_a_number, not_a_number, not_a_number, not_a_number};
  const auto [lowest, highest] = std::minmax_element(values.begin(), values.end());
  return {values.size(), median(values), *lowest, *highest, percentile(values, 0.1), percentile(values, 0.9)};
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", std::clamp(decimals, 0, 12), value);
  return text;
}

double rounded(double value, int decimals) {
  if (!std::isfinite(value)) return value;
  const double scale = std::pow(10.0, std::clamp(decimals, 0, 12));
  return std::round(value * scale) / scale;
}

json to_json(const summary& s, int decimals) {
  json out = json::object();
  out["median"] = json_number(s.median, decimals);
  out["min"] = json_number(s.min, decimals);
  out["max"] = json_number(s.max, decimals);
  out["p10"] = json_number(s.p10, decimals);
  out["p90"] = json_number(s.p90, decimals);
  out["n"] = s.count;
  return out;
}

ratio compare(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  std::vector<double> paired;
  for (std::size_t i = 0; i < numerator.size() && i < denominator.size(); ++i)
    paired.push_back(numerator[i] / denominator[i]);
  return {median(numerator) / median(denominator), summarize(paired)};
}

json ratio_json(const ratio& r) { return {{"of_medians", rounded(r.of_medians, 4)}, {"paired", to_json(r.paired, 4)}}; }

std::vector<std::string> ratio_row(std::string_view what, const ratio& r) {
  return {std::string(what), fixed(r.paired.median, 3) + "x", fixed(r.of_medians, 3) + "x",
          fixed(r.paired.min, 3) + "x", fixed(r.paired.max, 3) + "x"};
}

json goals_json(const std::vector<goal>& goals, bool& all_met) {
  json out = json::object();
  all_met = true;
  for (const goal& g : goals) {
    out[g.key] = {{"comparison", g.comparison}, {"target", g.target}, {"measured", rounded(g.measured, 4)}, {"met", g.met}};
    all_met = all_met && g.met;
  }
  return out;
}

text_table::text_table(std::vector<column> columns) : columns_(std::move(columns)) {}

void text_table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

// The width of each column: its widest cell or heading.
std::vector<std::size_t> text_table::widths() const {
  std::vector<std::size_t> out;
  out.reserve(columns_.size());
  for (const column& c : columns_) out.push_back(c.heading.size());
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) out[i] = std::max(out[i], row[i].size());
  return out;
}

// One line: cells (one per column) padded to their column's width on the side its alignment asks
// for, two spaces between columns, no trailing blanks.
void text_table::print_line(std::ostream& out, const std::vector<std::string>& cells,
                            const std::vector<std::size_t>& widths, std::size_t indent) const {
  std::string line(indent, ' ');
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const std::string& cell = cells[i];
    const std::string padding(widths[i] - std::min(widths[i], cell.size()), ' ');
    if (i > 0) line += "  ";
    line += columns_[i].alignment == align::right ? padding + cell : cell + padding;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out << line << '\n';
}

void text_table::print(std::ostream& out, std::size_t indent) const {
  const std::vector<std::size_t> w = widths();
  std::vector<std::string> headings;
  std::vector<std::string> rule;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    headings.push_back(columns_[i].heading);
    rule.emplace_back(w[i], '-');
  }
  print_line(out, headings, w, indent);
  print_line(out, rule, w, indent);
  for (const auto& row : rows_) print_line(out, row, w, indent);
}

text_table ratio_table(std::string title) {
  return text_table({{std::move(title)},
                     {"paired median", align::right},
                     {"of medians", align::right},
                     {"min paired", align::right},
                     {"max paired", align::right}});
}

}  // namespace membridge::bench
