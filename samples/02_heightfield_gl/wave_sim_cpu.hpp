// samples/02_heightfield_gl/wave_sim_cpu.hpp: the wave field on the CPU (the CPU path and CI).
#pragma once

#include "wave_sim.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace heightfield {

/// An n x n field and its previous step, in host memory, stepped with step_cell().
class cpu_wave {
 public:
  /// A flat field at rest.
  cpu_wave(int n, const wave_params& params);

  /// Adds `drops` to the field (at rest: to the current and the previous step alike).
  void add_drops(std::span<const drop> drops);
  /// Runs `steps` steps.
  void step(int steps);
  /// The current heights, n * n floats, row by row.
  [[nodiscard]] std::span<const float> heights() const noexcept { return curr_; }
  /// Cells per side.
  [[nodiscard]] int size() const noexcept { return n_; }

 private:
  [[nodiscard]] std::size_t index(int x, int y) const noexcept {
    return static_cast<std::size_t>(y) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(x);
  }
  int n_;
  wave_params params_;
  std::vector<float> prev_;
  std::vector<float> curr_;
};

}  // namespace heightfield
