#include "backends/sqlite/sqlite_doctor.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cstdio>

#include "backends/sqlite/file_system.hpp"

namespace dlock::detail::sqlite {
namespace {

std::string user_name(uid_t uid) {
  if (auto* p = ::getpwuid(uid)) return p->pw_name;
  return std::to_string(uid);
}

std::string group_name(gid_t gid) {
  if (auto* g = ::getgrgid(gid)) return g->gr_name;
  return std::to_string(gid);
}

check_finding access(const std::string& path) {
  check_finding f{.check = "file-mode"};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    f.status = check_status::unknown;
    f.reason = "cannot stat " + path;
    return f;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  auto owner = user_name(st.st_uid);
  auto group = group_name(st.st_gid);
  f.value = std::string(mode) + " " + owner + ":" + group;
  if (st.st_mode & S_IWOTH) {
    f.status = check_status::weakened;
    f.guarantee = "exclusion";
    f.reason = "the file is writable by every user: any of them can delete another's locks";
  } else if (st.st_mode & S_IWGRP) {
    f.reason = "the members of group " + group + " can share locks in it";
  } else {
    f.reason = "only " + owner +
               " can take locks in it (for a group: put it in a setgid directory of that group "
               "before its first use)";
  }
  return f;
}

}  // namespace

std::vector<check_finding> file_findings(const std::string& path) {
  std::vector<check_finding> out;
  auto fs = untrusted_file_system(path);
  out.push_back({.check = "file-system",
                 .guarantee = "exclusion",
                 .status = fs.empty() ? check_status::ok : check_status::unsafe,
                 .reason = fs.empty() ? "a local file system: SQLite's POSIX locks work"
                                      : "a " + fs + " file system: its locking cannot be trusted",
                 .value = fs.empty() ? "local" : fs});
  out.push_back({.check = "durability",
                 .guarantee = "fencing",
                 .reason = "WAL, synchronous=NORMAL: a process crash loses no commit; an OS "
                           "crash or power loss can lose the last ones",
                 .value = "journal_mode=wal synchronous=normal"});
  out.push_back(access(path));
  return out;
}

}  // namespace dlock::detail::sqlite
