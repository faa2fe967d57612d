// Must NOT compile: a traced value has no host truth value, so a native `if` on it is rejected
// instead of silently tracing one branch. CTest expects the compiler's "deleted function" error.
#include <iron/dsl.hpp>

using namespace iron::dsl;

void body() {
  Expr n = constexpr_("n", u32);
  Expr i = thread_id(0);
  if (i < n) {  // error: use of deleted function 'iron::dsl::Expr::operator bool'
    barrier();
  }
}
