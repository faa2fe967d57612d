// Compile errors name the DSL: the emitter records the DSL location of every source line, and a
// compiler's error on line N is followed by the DSL file:line whose instruction produced line N.
// One test per offline compiler (NVRTC, glslang, clang for HIP, the host clang's MSL check), each on a deliberately broken
// emission (EmitOptions::test_break_after_op: a bad line after the first store).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;

namespace {

struct Broken {
  ir::Kernel k;
  codegen::Emitted e;
  std::string store_at;  // the DSL file:line of the first store the emitter prints
};

// iron_add at f32, broken after its first store in emission order (blocks in order, an If's or
// For's blocks where the op stands), found here independently of the emitter's line map.
Broken broken(codegen::Target target) {
  Broken b;
  b.k = passes::optimize(kernel_ir("iron_add"));
  codegen::EmitOptions o;
  o.test_break_after_op = "store";
  b.e = codegen::emit(b.k, DType::F32, target, o);
  std::function<bool(ir::Id)> first_store = [&](ir::Id block) {
    for (ir::Id id : b.k.blocks[block].insts) {
      const ir::Inst& in = b.k.insts[id];
      if (in.op == ir::Op::Store) {
        b.store_at = b.k.where(in.loc);
        return true;
      }
      for (ir::Id child : in.blocks)
        if (child != ir::kNone && first_store(child)) return true;
    }
    return false;
  };
  first_store(0);
  return b;
}

void expect_located(const Broken& b, const std::string& log, const char* compiler) {
  ASSERT_FALSE(log.empty()) << compiler;
  ASSERT_NE(b.store_at.find("kernels/elementwise/"), std::string::npos) << b.store_at;
  const std::string located = codegen::locate_compile_log(log, b.e, b.k);
  EXPECT_NE(located.find("= emitted for " + b.store_at + " (kernel iron_add, source line "), std::string::npos)
      << compiler << " said:\n" << log << "\nlocated:\n" << located;
}

}  // namespace

TEST(LocatedErrors, EveryLineOfTheBodyCarriesItsInstructionsDslLocation) {
  const Broken b = broken(codegen::Target::Cuda);
  ASSERT_TRUE(b.e.ok());
  // Line count and map agree; the broken line maps to the store it follows; the prelude maps to nothing.
  size_t lines = 0, broken_line = 0;
  for (size_t at = 0, n = 1; at < b.e.source.size(); ++n) {
    const size_t nl = b.e.source.find('\n', at);
    if (b.e.source.compare(at, nl - at, "  iron_test_broken_line = ;") == 0 ||
        b.e.source.substr(at, nl - at).find("iron_test_broken_line") != std::string::npos)
      broken_line = broken_line ? broken_line : n;
    lines = n;
    at = nl + 1;
  }
  EXPECT_LE(b.e.line_locs.size(), lines);
  ASSERT_NE(broken_line, 0u) << b.e.source;
  EXPECT_EQ(b.k.where(b.e.dsl_loc(broken_line)), b.store_at);
  EXPECT_EQ(b.e.dsl_loc(1).line, 0u);  // "// Iron kernel ..." comment
}

TEST(LocatedErrors, GlslangErrorsNameTheDslLine) {
  const Broken b = broken(codegen::Target::Glsl);
  ASSERT_TRUE(b.e.ok());
  const codegen::Spirv s = codegen::compile_glsl(b.e.source, "broken");
  ASSERT_FALSE(s.ok);
  EXPECT_NE(s.log.find("ERROR: 0:"), std::string::npos) << s.log;
  expect_located(b, s.log, "glslang");
}

TEST(LocatedErrors, NvrtcErrorsNameTheDslLine) {
  const Broken b = broken(codegen::Target::Cuda);
  ASSERT_TRUE(b.e.ok());
  rt::NvrtcResult r;
  try {
    r = rt::nvrtc_compile(b.e.source, b.e.entry, "sm_90a");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();  // no libnvrtc on this machine
  }
  ASSERT_FALSE(r.ok);
  expect_located(b, r.log, "NVRTC");
}

TEST(LocatedErrors, HipClangErrorsNameTheDslLine) {
  const codegen::HipToolchain tc = codegen::hip_toolchain();
  if (!tc.ok()) GTEST_SKIP() << tc.why;
  const Broken b = broken(codegen::Target::Hip);
  ASSERT_TRUE(b.e.ok());
  const codegen::HipObject o = codegen::compile_hip(b.e.source, "gfx90a", "broken");
  ASSERT_FALSE(o.ok);
  expect_located(b, o.log, "clang (HIP)");
}

// Metal: no Metal compiler runs on these machines, so the compiler of record for MSL here is the
// host clang against the Metal-standard-library shim (tests/msl/check_msl.py, docs/msl.md). Its
// messages name the .metal file's own lines (the script compiles under #line), and they locate
// like any other compiler's.
TEST(LocatedErrors, MslShimCheckErrorsNameTheDslLine) {
  std::string clang;
  for (const char* c : {"clang++-15", "clang++-14", "clang++"})
    if (std::system((std::string("command -v ") + c + " >/dev/null 2>&1").c_str()) == 0) {
      clang = c;
      break;
    }
  if (clang.empty()) GTEST_SKIP() << "no host clang for the MSL shim check";
  const Broken b = broken(codegen::Target::Msl);
  ASSERT_TRUE(b.e.ok());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("iron-msl-located-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / (b.e.entry + ".metal"));
    f << b.e.source;
  }
  const std::string cmd = "python3 " IRON_TEST_DATA "/msl/check_msl.py " + clang + " " IRON_TEST_DATA "/msl/include " +
                          dir.string() + " 2>&1";
  std::string log;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) log.append(buf, n);
    pclose(p);
  }
  std::filesystem::remove_all(dir);
  EXPECT_NE(log.find("msl check: 1 files, 1 failed"), std::string::npos) << log;
  expect_located(b, log, "clang (MSL shim check)");
}
