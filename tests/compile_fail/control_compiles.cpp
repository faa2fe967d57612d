// The control for bool_branch_rejected.cpp: the same body written with if_ compiles, so the
// failure there is the native `if` and nothing else.
#include <iron/dsl.hpp>

using namespace iron::dsl;

void body() {
  Expr n = constexpr_("n", u32);
  Expr i = thread_id(0);
  if_(i < n, [&] { barrier(); });
}
