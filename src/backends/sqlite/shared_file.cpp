#include "backends/sqlite/shared_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace dlock::detail::sqlite {

void create_group_shared(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return;
  struct stat st {};
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  // A setgid directory is the usual way to say "files here belong to the group".
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !(st.st_mode & S_ISGID)) return;
  if (::lstat(path.c_str(), &st) == 0 || errno != ENOENT) return;
  // Created under another name and linked into place, so no other process ever opens the
  // database while it still has the umask's mode (it would open it read-only).
  static std::atomic<unsigned> serial{0};
  const std::string tmp =
      path + ".new-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return;
  bool ok = ::fstat(fd, &st) == 0 && ::fchmod(fd, (st.st_mode & 0777) | S_IRGRP | S_IWGRP) == 0;
  ::close(fd);
  if (ok) (void)::link(tmp.c_str(), path.c_str());  // EEXIST: another process was first
  ::unlink(tmp.c_str());
}

}  // namespace dlock::detail::sqlite
