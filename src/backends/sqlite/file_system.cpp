#include "backends/sqlite/file_system.hpp"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <cstdint>
#include <filesystem>

namespace dlock::detail::sqlite {
namespace {

// statfs(2) f_type values (linux/magic.h and the file systems' own sources).
struct fs_kind {
  std::uint32_t magic;
  const char* name;
};
// Network and FUSE file systems. Cluster file systems with coherent POSIX locks (GFS2,
// OCFS2, CephFS, Lustre with -o flock) are not listed: their locking holds across hosts.
constexpr fs_kind untrusted[] = {
    {0x6969, "nfs"},      {0x517B, "smb"},      {0xFF534D42, "cifs"}, {0xFE534D42, "smb2"},
    {0x65735546, "fuse"}, {0x01021997, "9p"},   {0x5346414F, "afs"},  {0x6B414653, "kafs"},
    {0x564C, "ncp"},      {0x73757245, "coda"},
};

}  // namespace

std::string untrusted_file_system(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) {
    auto slash = path.rfind('/');
    auto dir = slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
    if (::statfs(dir.c_str(), &st) != 0) return {};
  }
  const auto type = static_cast<std::uint32_t>(st.f_type);
  for (const auto& k : untrusted) {
    if (k.magic == type) return k.name;
  }
  return {};
}

result<void> check_local_file_system(const std::string& path) {
  auto fs = untrusted_file_system(path);
  if (fs.empty()) return {};
  return fail(errc::unsupported,
              "sqlite database '" + path + "' is on a " + fs +
                  " file system, whose file locking SQLite cannot rely on (two holders could "
                  "result): put it on a local file system, or use a server backend");
}

namespace {

// Where `find -xdev -samefile` must start: every name of a file is on its file system, so the
// topmost directory of that file system above it.
std::string mount_point(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  struct stat st {};
  if (ec || ::stat(p.c_str(), &st) != 0) return "/";
  const auto dev = st.st_dev;
  while (p.has_relative_path()) {
    auto up = p.parent_path();
    if (::stat(up.c_str(), &st) != 0 || st.st_dev != dev) break;
    p = std::move(up);
  }
  return p.string();
}

}  // namespace

std::uint64_t hard_links(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_nlink) : 0;
}

std::string hard_links_problem(const std::string& path, std::uint64_t links) {
  return "has " + std::to_string(links) +
         " hard links: SQLite keeps its WAL and shared-memory index per name (NAME-wal, "
         "NAME-shm), so processes that open it by different names do not see each other's "
         "locks (two can hold one lock) and corrupt the file; remove every other link (find " +
         mount_point(path) + " -xdev -samefile " + path + " lists them) and use one name";
}

result<void> check_single_name(const std::string& path) {
  auto links = hard_links(path);
  if (links <= 1) return {};
  return fail(errc::unsupported,
              "sqlite database '" + path + "' " + hard_links_problem(path, links));
}

}  // namespace dlock::detail::sqlite
