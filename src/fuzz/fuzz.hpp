// Cross-backend differential fuzzing: `iron fuzz` (the runner's `fuzz` command). Seeded random
// programs (random_program.hpp) run on every named backend (interp, vulkan, cuda) and their
// outputs are compared bit for bit; see docs/testing.md#cross-backend-fuzzing.
#pragma once

namespace iron::fuzz {

// `iron-runner fuzz [--backends interp,vulkan] [--programs N] [--seed S] [--lane-width W]
// [--exclude CLASSES] [--batch K] [--reports R]`: streams `device`, `fuzz_mismatch` and
// `fuzz_summary` messages (or one `error`). Returns 0 when every program agreed on every
// backend, 1 on any mismatch, 2 on bad usage or a backend that cannot be opened.
int fuzz_main(int argc, char** argv);

}  // namespace iron::fuzz
