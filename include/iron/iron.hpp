// The one header a kernel file includes: the DSL, registration and the test harness.
#pragma once

#include "iron/dsl.hpp"
#include "iron/harness.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "iron/types.hpp"
