// bench/support/stats.hpp: what every benchmark reports: order statistics of a sample (median and
// spread), a plain-text table for people and JSON values for scripts.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::bench {

/// The JSON type of the benchmarks' output: keys keep the order they were added in, so every line
/// starts with {"bench":...}.
using json = nlohmann::ordered_json;

/// Order statistics of one sample. All fields are NaN (count 0) for an empty sample.
struct summary {
  std::size_t count = 0;  ///< Number of values.
  double median = 0.0;    ///< 50th percentile.
  double min = 0.0;       ///< Smallest value.
  double max = 0.0;       ///< Largest value.
  double p10 = 0.0;       ///< 10th percentile.
  double p90 = 0.0;       ///< 90th percentile.
};

/// The `fraction` quantile (0 = min, 0.5 = median, 1 = max) of `values`, interpolated linearly
/// between the two nearest order statistics (NumPy's default). NaN for an empty sample.
[[nodiscard]] double percentile(std::vector<double> values, double fraction);

/// The arithmetic mean of `values`; NaN when empty.
[[nodiscard]] double mean(const std::vector<double>& values);

/// The median of `values` (the mean of the two middle values for an even count); NaN when empty.
[[nodiscard]] double median(std::vector<double> values);

/// Count, median, min, max, p10 and p90 of `values`.
[[nodiscard]] summary summarize(const std::vector<double>& values);

/// `value` with `decimals` digits after the point, e.g. fixed(5.5123, 2) == "5.51"; "nan" for NaN.
[[nodiscard]] std::string fixed(double value, int decimals);

/// `value` rounded to `decimals` digits after the point (keeps JSON lines short); NaN stays NaN.
[[nodiscard]] double rounded(double value, int decimals);

/// A summary as a JSON object {"median","min","max","p10","p90","n"}, values rounded to `decimals`
/// (0: written as integers). NaN values become null.
[[nodiscard]] json to_json(const summary& s, int decimals);

/// A comparison of two interleaved samples: the ratio of their medians (the headline) and the spread
/// of the ratios of paired samples (the same round, block or launch). Judged by the paired median:
/// drift that hits both sides within a pair cancels there.
struct ratio {
  double of_medians = 0.0;  ///< median(numerator) / median(denominator).
  summary paired;           ///< numerator[i] / denominator[i] over i.
};

/// numerator / denominator: of the medians, and paired value by value (up to the shorter length).
[[nodiscard]] ratio compare(const std::vector<double>& numerator, const std::vector<double>& denominator);

/// A ratio as the JSON object {"of_medians", "paired"}, rounded to 4 decimals.
[[nodiscard]] json ratio_json(const ratio& r);

/// A ratio table's row: `what`, the paired median (what goals use), the ratio of the medians and the
/// spread of the paired ratios, each as "1.234x".
[[nodiscard]] std::vector<std::string> ratio_row(std::string_view what, const ratio& r);

/// A goal of an issue, with the value this run measured.
struct goal {
  std::string key;          ///< JSON name.
  std::string description;  ///< For people.
  std::string comparison;   ///< ">=" or "<=".
  double target = 0.0;      ///< The bound.
  double measured = 0.0;    ///< What this run measured.
  bool met = false;         ///< Whether the measurement meets the bound.
};

/// {key: {"comparison","target","measured","met"}} for every goal (measured rounded to 4
/// decimals), in order; `all_met` is set to whether every goal is met.
[[nodiscard]] json goals_json(const std::vector<goal>& goals, bool& all_met);

/// How the cells of a table column line up.
enum class align : std::uint8_t {
  left = 0,   ///< Text columns.
  right = 1,  ///< Number columns.
};

/// One column of a text_table: its heading and alignment.
struct column {
  std::string heading;           ///< Printed above the rule.
  align alignment = align::left; ///< How the cells line up.
};

/// A plain-text table that sizes its columns to the widest cell:
///
///     metric      method        median
///     ----------  ----------  --------
///     total (ms)  classic        5.512
class text_table {
 public:
  /// A table with these columns (in order).
  explicit text_table(std::vector<column> columns);

  /// Appends a row; missing cells print empty, extra cells are dropped.
  void add_row(std::vector<std::string> cells);

  /// Writes the headings, a rule and every row, each line indented by `indent` spaces.
  void print(std::ostream& out, std::size_t indent = 2) const;

 private:
  [[nodiscard]] std::vector<std::size_t> widths() const;
  void print_line(std::ostream& out, const std::vector<std::string>& cells, const std::vector<std::size_t>& widths,
                  std::size_t indent) const;

  std::vector<column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

/// The header of a ratio table titled `title`: paired median, of medians, min paired, max paired
/// (rows from ratio_row).
[[nodiscard]] text_table ratio_table(std::string title);

}  // namespace membridge::bench
