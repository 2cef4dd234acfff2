#pragma once
// Progress of a long run on rank 0: a bar on a terminal, a line every few seconds in a log.

#include "stepsim/pdes/engine.hpp"

namespace stepsim::cli {

/// Seconds between progress updates: 0.5 on a terminal, 10 in a batch log.
double progress_interval();
/// Prints one update to stderr.
void print_progress(const pdes::Progress& p);
/// Prints one update of a training step: `done` of `total` pipeline ops (forward or backward of
/// a model chunk), the simulated time reached and an ETA.
void print_step_progress(std::uint64_t done, std::uint64_t total, double sim_s, double wall_s);
/// Ends a terminal progress bar (newline), if one was drawn.
void finish_progress();

}  // namespace stepsim::cli
