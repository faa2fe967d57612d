// Small helpers the unit tests share for kernels written as text IR: parse and verify, the
// parser's error text, and the tracer's group_sum expansion (used by the interpreter's exact-
// reduction and race tests).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/ir.hpp"
#include "iron/types.hpp"

namespace iron::test {

// Parses `text` and expects it to verify (the diagnostics are the failure message).
inline ir::Kernel parse_verified(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
  return k;
}

// The parser's error for `text`, or "" when it parses.
inline std::string parse_error(const std::string& text) {
  try {
    ir::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The tracer's group_sum expansion (lane_sum; lane 0 of each lane group publishes its partial;
// barrier; every lane group re-reduces the partials), with the barrier line as a parameter.
inline std::string group_sum_ir(bool with_barrier) {
  return std::string(
             "kernel gsum mode=Reduction {\n"
             "  param n: scalar<u32>\n"
             "  param x: in buf<f32> extent=n\n"
             "  param out: out buf<f32> extent=n\n"
             "  %0 = tg_alloc<partials, 256> : f32\n"
             "  %1 = program_id<0> : u32\n"
             "  %2 = group_size<0> : u32\n"
             "  %3 = local_id<0> : u32\n"
             "  %4 = mul %1, %2 : u32\n"
             "  %5 = add %4, %3 : u32\n"
             "  %6 = load<x> %5 : f32\n"
             "  %7 = lane_sum %6 : f32\n"
             "  %8 = lane_id : u32\n"
             "  %9 = simd_group_id : u32\n"
             "  %10 = num_simd_groups : u32\n"
             "  %11 = lane_width : u32\n"
             "  %12 = const<0> : u32\n"
             "  %13 = eq %8, %12 : bool\n"
             "  if %13 {\n"
             "    tg_store %0, %9, %7 @\"gsum.cpp\":20\n"
             "  }\n") +
         (with_barrier ? "  barrier\n" : "") +
         "  %14 = const<0> : f32\n"
         "  %15 = var %14 : f32\n"
         "  %16 = for %8, %10, %11 : u32 {\n"
         "    %17 = tg_load %0, %16 : f32 @\"gsum.cpp\":27\n"
         "    %18 = var_load %15 : f32\n"
         "    %19 = add %18, %17 : f32\n"
         "    var_store %15, %19\n"
         "  }\n"
         "  %20 = var_load %15 : f32\n"
         "  %21 = lane_sum %20 : f32\n"
         "  %22 = eq %3, %12 : bool\n"
         "  if %22 {\n"
         "    store<out> %1, %21\n"
         "  }\n"
         "}\n";
}

}  // namespace iron::test
