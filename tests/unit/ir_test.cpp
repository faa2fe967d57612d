// IR: printer/parser round trip, parse errors, verifier diagnostics.
#include <gtest/gtest.h>

#include "core/ir.hpp"
#include "iron/registry.hpp"

using namespace iron;

TEST(Ir, EveryRegisteredKernelRoundTripsThroughText) {
  auto kernels = registered_kernels();
  ASSERT_GE(kernels.size(), 6u);
  for (const KernelDecl* d : kernels) {
    const ir::Kernel& k = kernel_ir(d->name);
    for (bool locs : {false, true}) {
      std::string text = ir::print(k, {locs});
      ir::Kernel back = ir::parse(text);
      ir::Diagnostics diags;
      EXPECT_TRUE(ir::verify(back, diags)) << d->name << "\n" << diags.render(back);
      EXPECT_EQ(ir::print(back, {locs}), text) << d->name;
    }
    EXPECT_EQ(ir::content_hash(ir::parse(ir::print(k))), ir::content_hash(k));
  }
}
