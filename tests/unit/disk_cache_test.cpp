// The on-disk compile cache: round trip, keys, and corrupt or truncated entries rejected and
// rebuilt rather than loaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "runtime/disk_cache.hpp"

using iron::rt::cache_key;
using iron::rt::DiskCache;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / ("iron_disk_cache_test_" + std::string(name) + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}
}  // namespace

TEST(DiskCache, StoresAndLoadsByKey) {
  DiskCache c(fresh_dir("roundtrip").string());
  std::string key = cache_key({"cuda", "sm_90a", "nvrtc 13.0", "source text"});
  EXPECT_FALSE(c.load(key));
  std::string payload = "compiled bytes \x01\x02\x03";
  c.store(key, payload.data(), payload.size());
  auto got = c.load(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::string(got->begin(), got->end()), payload);
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().writes, 1u);
}

TEST(DiskCache, KeysSeparateTheirParts) {
  EXPECT_NE(cache_key({"ab", "c"}), cache_key({"a", "bc"}));
  EXPECT_NE(cache_key({"cuda", "sm_90a", "x"}), cache_key({"cuda", "sm_80", "x"}));
  EXPECT_EQ(cache_key({"a", "b"}), cache_key({"a", "b"}));
}

TEST(DiskCache, CorruptOrTruncatedEntriesAreRejectedAndRemoved) {
  fs::path dir = fresh_dir("corrupt");
  DiskCache c(dir.string());
  std::string key = cache_key({"spirv", "module"});
  std::string payload(1000, 'x');
  c.store(key, payload.data(), payload.size());
  fs::path file = dir / (key + ".bin");
  ASSERT_TRUE(fs::exists(file));
  {  // flip one payload byte
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('y');
  }
  EXPECT_FALSE(c.load(key));
  EXPECT_EQ(c.stats().corrupt, 1u);
  EXPECT_FALSE(fs::exists(file));
  c.store(key, payload.data(), payload.size());  // rebuilt
  fs::resize_file(file, fs::file_size(file) - 7);  // truncated
  EXPECT_FALSE(c.load(key));
  EXPECT_EQ(c.stats().corrupt, 2u);
  c.store(key, payload.data(), payload.size());
  EXPECT_TRUE(c.load(key));
}

TEST(DiskCache, AnEntryUnderAnotherKeyIsNotServed) {
  fs::path dir = fresh_dir("foreign");
  DiskCache c(dir.string());
  std::string a = cache_key({"a"}), b = cache_key({"b"});
  c.store(a, "AAAA", 4);
  fs::copy_file(dir / (a + ".bin"), dir / (b + ".bin"));
  EXPECT_FALSE(c.load(b));
  EXPECT_TRUE(c.load(a));
}

TEST(DiskCache, ADisabledCacheStoresNothing) {
  DiskCache c("");
  EXPECT_FALSE(c.enabled());
  c.store("k", "x", 1);
  EXPECT_FALSE(c.load("k"));
}

// clear() removes the cache's entries and a store's leftover temporary, and nothing else: a file
// named like an entry without the entry header, the calibration cache, a link to an entry (the
// entry it points to is removed as an entry of its own, the link stays) and a directory.
TEST(DiskCache, ClearRemovesEntriesOnly) {
  fs::path dir = fresh_dir("clear");
  DiskCache c(dir.string());
  std::string k1 = cache_key({"one"}), k2 = cache_key({"two"});
  c.store(k1, "abc", 3);
  c.store(k2, "defg", 4);
  fs::copy_file(dir / (k1 + ".bin"), dir / (k1 + ".bin.tmp.4242"));  // a store that never renamed
  std::ofstream(dir / "calibration.json") << "{}\n";
  std::ofstream(dir / "0123456789abcdef0123456789abcdef.bin") << "someone else's file\n";
  std::ofstream(dir / (k1 + ".bin.tmp.x")) << "not a temporary name\n";
  fs::create_symlink(dir / (k2 + ".bin"), dir / "fedcba9876543210fedcba9876543210.bin");
  fs::create_directory(dir / "ffffffffffffffffffffffffffffffff.bin");
  DiskCache::Cleared got = c.clear();
  EXPECT_EQ(got.entries, 3u);
  EXPECT_EQ(got.others, 5u);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"calibration.json", "0123456789abcdef0123456789abcdef.bin", k1 + ".bin.tmp.x",
                                         "fedcba9876543210fedcba9876543210.bin", "ffffffffffffffffffffffffffffffff.bin"}));
  EXPECT_FALSE(c.load(k1));
  fs::remove_all(dir);
}
