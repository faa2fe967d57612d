// On-disk compile cache (see disk_cache.hpp).
#include "runtime/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

namespace {

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

// Reads exactly `n` bytes; false on a short read or an error.
bool read_all(int fd, void* dst, size_t n) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= size_t(got);
  }
  return true;
}

bool write_all(int fd, const void* src, size_t n) {
  const char* p = static_cast<const char*>(src);
  while (n > 0) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= size_t(put);
  }
  return true;
}

}  // namespace

// Only a regular file is ever read: the entry is opened without following a symbolic link and
// without blocking (a FIFO or a device in its place would otherwise hang the open or the read),
// then checked with fstat. Anything else counts as a corrupt entry: reported, removed where
// possible, and rebuilt.
std::optional<std::vector<char>> DiskCache::load(std::string_view key) {
  if (!enabled()) return std::nullopt;
  std::lock_guard lock(g_mu);
  std::string path = path_of(key);
  auto corrupt = [&](const std::string& why) {
    ++stats_.corrupt;
    ++stats_.misses;
    last_problem_ = "disk cache entry " + path + " " + why + "; ignored and rebuilt";
    std::fprintf(stderr, "iron: warning: %s\n", last_problem_.c_str());
    std::error_code ec;
    fs::remove(path, ec);  // never recursive: a directory in its place is left to its owner
    return std::nullopt;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) return corrupt("is a symbolic link");
    ++stats_.misses;  // absent (or unreadable: the rebuilt entry is written by rename)
    return std::nullopt;
  }
  struct stat st {};
  std::vector<char> data;
  std::string why;
  Header h{};
  if (::fstat(fd, &st) != 0) {
    why = "cannot be examined";
  } else if (!S_ISREG(st.st_mode)) {
    why = std::string("is ") + file_kind(st.st_mode) + ", not a regular file";
  } else if (uint64_t(st.st_size) < sizeof h || !read_all(fd, &h, sizeof h) ||
             std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key_hash != XXH3_64bits(key.data(), key.size()) ||
             h.size >= (uint64_t(1) << 32) || uint64_t(st.st_size) != sizeof h + h.size) {
    why = "is truncated, corrupt or foreign";
  } else {
    data.resize(h.size);
    if (!read_all(fd, data.data(), data.size()) || XXH3_64bits(data.data(), data.size()) != h.checksum)
      why = "is truncated, corrupt or foreign";
  }
  ::close(fd);
  if (!why.empty()) return corrupt(why);
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
    // O_EXCL after removing a stale temporary: never writes through a link or into a FIFO.
    fs::remove(tmp, ec);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, &h, sizeof h) && write_all(fd, data, bytes);
    if (fd >= 0) ok = (::close(fd) == 0) && ok;
    if (!ok) {
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

DiskCache::Cleared DiskCache::clear() {
  Cleared c;
  if (!enabled()) return c;
  std::lock_guard lock(g_mu);
  std::error_code ec;
  auto is_entry_name = [](const std::string& name) {
    if (name.size() < 36 || name.compare(32, 4, ".bin") != 0) return false;
    for (size_t i = 0; i < 32; ++i)
      if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i])))
        return false;
    if (name.size() == 36) return true;
    if (name.compare(36, 5, ".tmp.") != 0 || name.size() == 41) return false;
    return name.find_first_not_of("0123456789", 41) == std::string::npos;
  };
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    fs::file_status st = it->symlink_status(ec);
    bool ours = false;
    uint64_t size = 0;
    if (!ec && fs::is_regular_file(st) && is_entry_name(name)) {
      int fd = ::open(it->path().c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
      char magic[sizeof kMagic] = {};
      struct stat s {};
      if (fd >= 0) {
        ours = ::fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && read_all(fd, magic, sizeof magic) &&
               std::memcmp(magic, kMagic, sizeof kMagic) == 0;
        size = uint64_t(s.st_size);
        ::close(fd);
      }
    }
    std::error_code rm;
    if (ours && fs::remove(it->path(), rm)) {
      ++c.entries;
      c.bytes += size;
    } else {
      ++c.others;
    }
    ec.clear();
  }
  return c;
}

}  // namespace iron::rt
