#include "backends/sqlite/sqlite_doctor.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Doctor opens an existing file only to look, so a file this user may read but not lock in
// passed while `dlock run` then failed with permission denied: in WAL mode a lock needs the
// file writable and its directory too (SQLite creates and removes FILE-wal and FILE-shm there).
check_finding write_access(const std::string& path) {
  check_finding f{.check = "write-access"};
  auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  auto can = [](const std::string& p, int mode) {
    return ::faccessat(AT_FDCWD, p.c_str(), mode, AT_EACCESS) == 0;
  };
  if (!can(path, W_OK)) {
    f.status = check_status::unsafe;
    f.value = "file read-only";
    f.reason = "this user cannot write " + path +
               ": it can look (status, list) but not take "
               "locks (run and elect exit 77)";
  } else if (!can(dir, W_OK | X_OK)) {
    f.status = check_status::unsafe;
    f.value = "directory read-only";
    f.reason = "this user cannot create files in " + dir + ", where SQLite keeps " + path +
               "-wal and -shm: run and elect exit 77; make the directory writable for the "
               "users who share the locks (e.g. a setgid directory of their group)";
  } else {
    f.value = "file and directory writable";
    f.reason = "this user can take locks in it";
  }
  return f;
}

// Refused at open (file_system.hpp), so found here only when a name was added since; a
// live session ends at its next request then.
check_finding names(const std::string& path) {
  const auto links = hard_links(path);
  check_finding f{.check = "hard-links", .value = std::to_string(links)};
  if (links == 0) {
    f.status = check_status::unknown;
    f.reason = "cannot stat " + path;
  } else if (links > 1) {
    f.status = check_status::unsafe;
    f.guarantee = "exclusion";
    f.reason = "the file " + hard_links_problem(path, links);
  } else {
    f.reason = "one name: every process finds its -wal and -shm beside it";
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
  // Weakened, not ok: the reboot after an OS crash ends every lease of this host, but the
  // fence counter may have lost its last bumps, so a token already handed out (and perhaps
  // recorded by a resource on another host) can be handed out again.
  out.push_back({.check = "durability",
                 .guarantee = "fencing",
                 .status = check_status::weakened,
                 .reason = "WAL, synchronous=NORMAL: a process crash loses no commit; an OS "
                           "crash or power loss can lose the last grants, and their tokens can "
                           "be handed out again after the reboot",
                 .value = "journal_mode=wal synchronous=normal"});
  out.push_back(names(path));
  out.push_back(access(path));
  out.push_back(write_access(path));
  return out;
}

}  // namespace dlock::detail::sqlite
