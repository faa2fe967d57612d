// The fuzz generator's subnormal guard (RandomProgramOptions::flush_guard), which `iron fuzz`
// turns on for a device that flushes f32 subnormals (the NVIDIA Vulkan driver): a guarded
// program must mean the same whether or not subnormals are flushed. Each program runs on the
// interpreter twice, with IEEE denormals and with the host's SSE flush-to-zero and
// denormals-are-zero modes (a model of a flushing GPU), and the outputs must agree bit for bit.
// The same programs without the guard do differ under that model, so the check can fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "fuzz/random_program.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

#if defined(__SSE2__)
// Flush-to-zero and denormals-are-zero for this thread (the interpreter runs on it) while alive.
class FlushDenormals {
 public:
  FlushDenormals() : saved_(_mm_getcsr()) {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
  ~FlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
};

// How many of `count` cross-backend programs give different outputs with and without flushing.
int programs_that_differ(bool guard, uint64_t first_seed, int count, std::string& example) {
  int differ = 0;
  for (uint64_t seed = first_seed; seed < first_seed + uint64_t(count); ++seed) {
    fuzz::RandomProgramOptions opts;
    opts.cross_backend = true;
    opts.flush_guard = guard;
    ir::Kernel k = fuzz::random_program(seed, fuzz::reduction_seed(seed), opts);
    fuzz::RandomLaunch launch = fuzz::random_launch(k, seed, opts);
    ir::Kernel optimized = passes::optimize(k);
    std::vector<std::vector<unsigned char>> ieee, flushed;
    std::string ieee_error, flushed_error;
    try {
      ieee = fuzz::run_launch(optimized, launch, 32);
    } catch (const std::exception& e) {
      ieee_error = e.what();
    }
    try {
      FlushDenormals ftz;
      flushed = fuzz::run_launch(optimized, launch, 32);
    } catch (const std::exception& e) {
      flushed_error = e.what();
    }
    std::string why = ieee_error != flushed_error ? "errors: '" + ieee_error + "' / '" + flushed_error + "'"
                      : ieee_error.empty()        ? fuzz::first_difference(k, launch.dtype, ieee, flushed)
                                                  : std::string();
    if (why.empty()) continue;
    if (differ++ == 0) example = "seed " + std::to_string(seed) + ": " + why;
  }
  return differ;
}
#endif

TEST(FlushGuard, GuardedProgramsMeanTheSameWhenSubnormalsAreFlushed) {
#if defined(__SSE2__)
  std::string example;
  EXPECT_EQ(programs_that_differ(true, 1, 400, example), 0) << example;
#else
  GTEST_SKIP() << "needs the SSE flush-to-zero modes to model a flushing device";
#endif
}

TEST(FlushGuard, UnguardedProgramsDoDifferWhenSubnormalsAreFlushed) {
#if defined(__SSE2__)
  std::string example;
  EXPECT_GT(programs_that_differ(false, 1, 400, example), 10);
#else
  GTEST_SKIP() << "needs the SSE flush-to-zero modes to model a flushing device";
#endif
}

}  // namespace
