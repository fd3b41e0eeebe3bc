#include "backends/sqlite/shared_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace dlock::detail::sqlite {
namespace {

// Never over a file another process made meanwhile (EEXIST: it was first, and may use it).
// A rename, not a link: a linked file has two names until the temporary one is removed, and
// a process opening the database then would refuse it (file_system.hpp). A link only where
// the file system cannot rename without replacing.
void move_into_place(const std::string& tmp, const std::string& path) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EINVAL || errno == ENOSYS) (void)::link(tmp.c_str(), path.c_str());
}

}  // namespace

void create_group_shared(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return;
  struct stat st {};
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  // A setgid directory is the usual way to say "files here belong to the group".
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !(st.st_mode & S_ISGID)) return;
  if (::lstat(path.c_str(), &st) == 0 || errno != ENOENT) return;
  // Created under another name and moved into place, so no other process ever opens the
  // database while it still has the umask's mode (it would open it read-only).
  static std::atomic<unsigned> serial{0};
  const std::string tmp =
      path + ".new-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return;
  bool ok = ::fstat(fd, &st) == 0 && ::fchmod(fd, (st.st_mode & 0777) | S_IRGRP | S_IWGRP) == 0;
  ::close(fd);
  if (ok) move_into_place(tmp, path);
  ::unlink(tmp.c_str());
}

}  // namespace dlock::detail::sqlite
