// The pass mutations `iron opt --mutation` accepts (src/passes/mutations.def) are exactly
// those the passes define, so a misspelt or removed mutation is a usage error, never an
// unmutated run that looks like a surviving mutant.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// mutations.def (what `iron opt --mutation` accepts) names exactly the mutations the passes'
// code switches on with ctx.mutant("...").
TEST(Mutations, ListMatchesThePasses) {
  std::vector<std::string> listed = {
#define IRON_PASS_MUTATION(name) name,
#include "passes/mutations.def"
#undef IRON_PASS_MUTATION
  };
  std::vector<std::string> used;
  for (const auto& e : std::filesystem::directory_iterator(std::string(IRON_TEST_DATA) + "/../src/passes")) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream f(e.path());
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (size_t p = text.find("mutant(\""); p != std::string::npos; p = text.find("mutant(\"", p + 1)) {
      size_t b = p + 8, q = text.find('"', b);
      used.push_back(text.substr(b, q - b));
    }
  }
  std::sort(listed.begin(), listed.end());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  EXPECT_EQ(listed, used);
}
