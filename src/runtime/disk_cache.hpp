// The on-disk compile cache: compiled artefacts (CUBIN, SPIR-V) keyed by everything that
// changes them — target, architecture, toolchain version, options and the emitted source. Writes
// are atomic (temporary file + rename) and best effort: a failed write never fails a run. Every
// entry carries its size and a checksum; a truncated or corrupt entry is detected, removed and
// rebuilt, never loaded. Only regular files are read: a FIFO, device, directory or symbolic link
// in place of an entry is reported as corrupt, never opened in a way that could block.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iron::rt {

class DiskCache {
 public:
  // The process-wide cache: $IRON_CACHE_DIR, else $XDG_CACHE_HOME/iron, else ~/.cache/iron.
  // IRON_NO_DISK_CACHE=1 turns it off.
  static DiskCache& instance();
  explicit DiskCache(std::string dir);  // tests use their own directory

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::optional<std::vector<char>> load(std::string_view key);
  void store(std::string_view key, const void* data, size_t bytes);

  struct Stats {
    uint64_t hits = 0, misses = 0, corrupt = 0, writes = 0, write_failures = 0;
  };
  Stats stats() const { return stats_; }
  // Removes every entry of the cache (and temporaries a store left behind): regular files named
  // <32 hex digits>.bin[.tmp.<pid>] that begin with the entry header. Anything else in the
  // directory (the calibration cache, a foreign file, a link) is left alone and counted.
  struct Cleared {
    uint64_t entries = 0, bytes = 0, others = 0;
  };
  Cleared clear();
  // The last entry found corrupt and why ("" if none); also printed as a warning on stderr.
  const std::string& last_problem() const { return last_problem_; }

 private:
  std::string path_of(std::string_view key) const;
  std::string dir_;
  Stats stats_;
  std::string last_problem_;
};

// A cache key: 128 bits of content hash over the parts, as hex.
std::string cache_key(const std::vector<std::string_view>& parts);

}  // namespace iron::rt
