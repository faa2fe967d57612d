// On-disk compile cache (see disk_cache.hpp).
#include "runtime/disk_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace iron::rt {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'I', 'R', 'O', 'N', 'C', 'A', 'C', '1'};

struct Header {
  char magic[8];
  uint64_t key_hash;
  uint64_t size;
  uint64_t checksum;
};

std::string default_dir() {
  if (const char* off = std::getenv("IRON_NO_DISK_CACHE"); off && *off && std::string(off) != "0") return {};
  if (const char* d = std::getenv("IRON_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/iron";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/iron";
  return {};
}

std::mutex g_mu;

}  // namespace

std::string cache_key(const std::vector<std::string_view>& parts) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  for (std::string_view p : parts) {
    uint64_t n = p.size();
    XXH3_128bits_update(st, &n, sizeof n);  // length-prefixed: ("ab","c") != ("a","bc")
    XXH3_128bits_update(st, p.data(), p.size());
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
  return buf;
}

DiskCache& DiskCache::instance() {
  static DiskCache cache(default_dir());
  return cache;
}

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {}

std::string DiskCache::path_of(std::string_view key) const { return dir_ + "/" + std::string(key) + ".bin"; }

std::optional<std::vector<char>> DiskCache::load(std::string_view key) {
  if (!enabled()) return std::nullopt;
  std::lock_guard lock(g_mu);
  std::string path = path_of(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    ++stats_.misses;
    return std::nullopt;
  }
  Header h{};
  std::vector<char> data;
  bool ok = bool(f.read(reinterpret_cast<char*>(&h), sizeof h)) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            h.key_hash == XXH3_64bits(key.data(), key.size()) && h.size < (uint64_t(1) << 32);
  if (ok) {
    data.resize(h.size);
    ok = bool(f.read(data.data(), std::streamsize(h.size))) && f.peek() == EOF &&
         XXH3_64bits(data.data(), data.size()) == h.checksum;
  }
  if (!ok) {
    // Truncated, corrupt or foreign: never load it; remove it so the rebuilt entry replaces it.
    ++stats_.corrupt;
    ++stats_.misses;
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  }
  ++stats_.hits;
  return data;
}

void DiskCache::store(std::string_view key, const void* data, size_t bytes) {
  if (!enabled()) return;
  std::lock_guard lock(g_mu);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string path = path_of(key);
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_hash = XXH3_64bits(key.data(), key.size());
  h.size = bytes;
  h.checksum = XXH3_64bits(data, bytes);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f.write(static_cast<const char*>(data), std::streamsize(bytes));
    if (!f) {
      ++stats_.write_failures;
      fs::remove(tmp, ec);
      return;
    }
  }
  // rename is atomic: readers see the old entry or the complete new one, never a partial file.
  fs::rename(tmp, path, ec);
  if (ec) {
    ++stats_.write_failures;
    fs::remove(tmp, ec);
    return;
  }
  ++stats_.writes;
}

}  // namespace iron::rt
