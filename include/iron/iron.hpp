// The one header a kernel file includes: the DSL, registration, tests and benchmarks.
#pragma once

#include "iron/bench.hpp"
#include "iron/dsl.hpp"
#include "iron/harness.hpp"
#include "iron/launch.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "iron/types.hpp"
