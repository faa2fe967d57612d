// A bounded fuzz campaign of the text-IR parser: the printed IR of every registered kernel (with
// and without locations) and the pass-test inputs are mutated tens of thousands of times —
// byte flips, token swaps and substitutions, truncation, line edits, deep nesting, huge and
// malformed literals — and each mutant goes through parse -> verify (and, when it verifies,
// print -> parse and the pipeline). Every outcome must be a success or the parser's own located
// error ("IR parse error at L:C: ..."); any other exception fails the test, and a crash or a
// hang fails it too (CTest's timeout). Deterministic: IRON_PARSE_FUZZ_SEED and
// IRON_PARSE_FUZZ_ITERS reproduce or widen a run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : size_t(next() % n); }
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel& k = kernel_ir(d->name);
    out.push_back(ir::print(k));
    out.push_back(ir::print(k, {true}));
  }
  for (const auto& e : std::filesystem::directory_iterator(std::string(IRON_TEST_DATA) + "/passes")) {
    if (e.path().extension() != ".ir") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

std::vector<std::string> split_tokens(const std::string& s) {
  std::vector<std::string> t;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == ',' || c == '<' || c == '>') {
      if (!cur.empty()) t.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) t.push_back(cur);
  return t;
}

const char* const kLiterals[] = {"99999999999999999999", "4294967296", "-2147483649", "1e400", "-1e39", "nan",
                                 "-0",  "0x10", "abc", "", "18446744073709551616", "-9223372036854775808",
                                 "3", "-1", "1.5", "inf", "2147483648", "00"};
const char kAlphabet[] = "%<>{}:,=*@\";\n -0123456789abcdefinoprstuvx?TP";

// One mutation of `s`; `tokens` is a pool of tokens from every seed.
std::string mutate(std::string s, Rng& r, const std::vector<std::string>& tokens) {
  if (s.empty()) return s;
  switch (r.below(9)) {
    case 0:  // byte flips
      for (size_t n = 1 + r.below(4); n-- > 0;) s[r.below(s.size())] = kAlphabet[r.below(sizeof kAlphabet - 1)];
      break;
    case 1:  // bit flip
      s[r.below(s.size())] ^= char(1 << r.below(8));
      break;
    case 2:  // truncation
      s.resize(r.below(s.size()));
      break;
    case 3: {  // token substitution: a token from anywhere in the corpus replaces one here
      const std::string& t = tokens[r.below(tokens.size())];
      size_t at = r.below(s.size());
      size_t end = s.find_first_of(" \n,<>", at);
      s.replace(at, (end == std::string::npos ? s.size() : end) - at, t);
      break;
    }
    case 4: {  // swap two lines
      std::vector<std::string> lines;
      std::stringstream ss(s);
      for (std::string l; std::getline(ss, l);) lines.push_back(l);
      if (lines.size() > 2) std::swap(lines[r.below(lines.size())], lines[r.below(lines.size())]);
      if (!lines.empty() && r.below(2)) lines.erase(lines.begin() + long(r.below(lines.size())));
      if (!lines.empty() && r.below(2)) lines.insert(lines.begin() + long(r.below(lines.size())), lines[r.below(lines.size())]);
      s.clear();
      for (const std::string& l : lines) s += l + "\n";
      break;
    }
    case 5: {  // a literal inside <...> replaced by a huge or malformed one
      size_t lt = s.find('<', r.below(s.size()));
      size_t gt = lt == std::string::npos ? lt : s.find('>', lt);
      if (gt != std::string::npos) s.replace(lt + 1, gt - lt - 1, kLiterals[r.below(std::size(kLiterals))]);
      break;
    }
    case 6: {  // deep nesting around a point: just below, at and far past the limit
      const size_t depths[] = {ir::kMaxNesting - 1, ir::kMaxNesting, ir::kMaxNesting + 1, 20000};
      size_t depth = depths[r.below(4)];
      size_t at = s.find('\n', r.below(s.size()));
      if (at == std::string::npos) break;
      std::string cond = "%" + std::to_string(r.below(8));
      std::string open, close;
      for (size_t i = 0; i < depth; ++i) open += (r.below(2) ? "if " + cond + " {\n" : "%99" + std::to_string(i) + " = for " + cond + ", " + cond + ", " + cond + " : u32 {\n");
      for (size_t i = 0; i < depth; ++i) close += "}\n";
      s.insert(at + 1, open + close);
      break;
    }
    case 7: {  // numbers anywhere
      size_t at = s.find_first_of("0123456789", r.below(s.size()));
      if (at != std::string::npos) s.replace(at, 1, kLiterals[r.below(std::size(kLiterals))]);
      break;
    }
    default: {  // insert a corpus token at a random point
      s.insert(r.below(s.size()), tokens[r.below(tokens.size())] + (r.below(2) ? " " : "\n"));
      break;
    }
  }
  return s;
}

bool located_parse_error(const std::string& m) {
  // "IR parse error at L:C: ..."
  const std::string pre = "IR parse error at ";
  if (m.rfind(pre, 0) != 0) return false;
  size_t i = pre.size(), digits = 0;
  while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i, ++digits;
  if (digits == 0 || i >= m.size() || m[i] != ':') return false;
  ++i;
  digits = 0;
  while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i, ++digits;
  return digits > 0 && m.compare(i, 2, ": ") == 0;
}

}  // namespace

TEST(ParseFuzz, MutatedIrParsesOrFailsWithALocatedError) {
  const uint64_t seed = env_or("IRON_PARSE_FUZZ_SEED", 7);
  const uint64_t iters = env_or("IRON_PARSE_FUZZ_ITERS", 20000);
  std::vector<std::string> corpus = seeds();
  ASSERT_GE(corpus.size(), 12u);
  std::vector<std::string> tokens;
  for (const std::string& s : corpus)
    for (std::string& t : split_tokens(s)) tokens.push_back(std::move(t));
  Rng r{seed};
  uint64_t parsed = 0, verified = 0, optimized = 0, rejected = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < iters; ++i) {
    std::string text = corpus[r.below(corpus.size())];
    for (size_t m = 1 + r.below(3); m-- > 0;) text = mutate(std::move(text), r, tokens);
    std::string stage = "parse";
    try {
      ir::Kernel k = ir::parse(text);
      ++parsed;
      stage = "verify";
      ir::Diagnostics d;
      if (!ir::verify(k, d)) continue;
      ++verified;
      stage = "print -> parse";
      std::string printed = ir::print(k, {true});
      ir::Kernel back = ir::parse(printed);
      ASSERT_EQ(ir::print(back, {true}), printed) << "round trip differs, iteration " << i;
      stage = "pipeline";
      if (!k.is_function) {
        passes::PipelineOptions opts;
        opts.verify_each = true;
        passes::run_pipeline(k, opts);  // diagnostics are fine; a crash or a stray exception is not
        ++optimized;
      }
    } catch (const Error& e) {
      if (stage != "parse" || !located_parse_error(e.what()))
        FAIL() << "iteration " << i << " (seed " << seed << "), " << stage << ": unexpected error: " << e.what()
               << "\n--- input ---\n" << text.substr(0, 4000);
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << i << " (seed " << seed << "), " << stage << ": " << e.what() << "\n--- input ---\n"
             << text.substr(0, 4000);
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[parse fuzz] %llu mutants (seed %llu): %llu rejected with a located error, %llu parsed, %llu verified, "
              "%llu through the pipeline; %.2f s\n",
              (unsigned long long)iters, (unsigned long long)seed, (unsigned long long)rejected,
              (unsigned long long)parsed, (unsigned long long)verified, (unsigned long long)optimized, s);
  // The campaign must exercise both outcomes, or the mutations have gone blind.
  EXPECT_GT(rejected, iters / 4);
  EXPECT_GT(verified, iters / 400);
}
