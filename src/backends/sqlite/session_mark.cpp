#include "backends/sqlite/session_mark.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace dlock::detail::sqlite {
namespace {

// FNV-1a: the same byte in every process and every build, which std::hash does not promise.
off_t byte_of(std::string_view session) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : session) h = (h ^ c) * 0x100000001b3ull;
  return static_cast<off_t>(h & ((std::uint64_t{1} << 62) - 1));
}

bool lock_byte(int fd, short type, off_t at, int cmd, struct flock* out = nullptr) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  l.l_pid = 0;  // required by OFD locks
  int r;
  while ((r = ::fcntl(fd, cmd, &l)) != 0 && errno == EINTR) {
  }
  if (out) *out = l;
  return r == 0;
}

}  // namespace

session_mark::session_mark(const std::string& db_path, bool create) {
  const std::string path = db_path + "-sessions";
  if (create) {
    // Created with the database's mode (group-shared databases stay group-shared); a viewer
    // that can read the database can read the marks.
    struct stat st {};
    mode_t mode = ::stat(db_path.c_str(), &st) == 0 ? (st.st_mode & 0666) : 0644;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd_ >= 0) (void)::fchmod(fd_, mode);  // past the umask, like the database
  }
  if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

session_mark::~session_mark() {
  if (fd_ >= 0) ::close(fd_);
}

void session_mark::set(std::string_view session) const noexcept {
  if (fd_ >= 0) (void)lock_byte(fd_, F_RDLCK, byte_of(session), F_OFD_SETLK);
}

void session_mark::clear(std::string_view session) const noexcept {
  if (fd_ >= 0) (void)lock_byte(fd_, F_UNLCK, byte_of(session), F_OFD_SETLK);
}

bool session_mark::held_elsewhere(std::string_view session) const noexcept {
  struct flock l {};
  if (fd_ < 0 || !lock_byte(fd_, F_WRLCK, byte_of(session), F_OFD_GETLK, &l)) return false;
  return l.l_type != F_UNLCK;
}

}  // namespace dlock::detail::sqlite
