#pragma once
// Which PID namespace this process is in, so that a pid in an owner text is judged only where
// it means the same process. The initial namespace's inode is fixed by the kernel
// (PROC_PID_INIT_INO, since Linux 3.8); /proc/self/ns/pid names this process's.

#include <sys/stat.h>

#include <cstdint>

namespace dlock::detail {

inline constexpr std::uint64_t initial_pid_namespace = 0xEFFFFFFCU;

// This process's PID namespace inode, or 0 when /proc cannot tell.
inline std::uint64_t pid_namespace() noexcept {
  static const std::uint64_t ns = [] {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino)
                                                 : std::uint64_t{0};
  }();
  return ns;
}

}  // namespace dlock::detail
