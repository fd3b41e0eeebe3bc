#pragma once
// Identity of a process on this host, so a holder whose process is gone is freed at once:
// (host id, pid, process start time). The start time guards against pid reuse.

#include <cstdint>
#include <string>

namespace dlock::detail {

struct process_id {
  std::string host;  // hostname + boot id: differs after a reboot
  std::int64_t pid{0};
  std::int64_t start{0};  // /proc/PID/stat field 22, clock ticks since boot
};

process_id this_process();
// This boot's id (/proc/sys/kernel/random/boot_id), or "" if it cannot be read (then
// boot_id_error() is the errno of the last read).
std::string boot_id();
int boot_id_error();
// CLOCK_BOOTTIME in milliseconds: shared by every process of the host, never stepped, counts
// time spent suspended.
std::int64_t boot_clock_ms();
// False only when the process certainly no longer exists on this host.
bool process_alive(const process_id& p);

}  // namespace dlock::detail
