#pragma once
// The history checker: decides from the merged worker logs and the fenced register's own
// record whether a run kept mutual exclusion as far as the resource could observe.
//
// Rules (each violation names one):
//  - token_order: in grant order, fencing tokens strictly increase.
//  - fake_grant: every `granted` follows an `acquire_start` of the same worker, carries a
//    nonzero token no other grant carries; every accepted write's token was granted.
//  - overlap: two critical sections overlap although the older one ended normally
//    (released, no loss seen) -- the lock service granted twice.
//  - stale_write_accepted: the older of two overlapping sections (one that ended by loss,
//    kill or crash) had a write ACCEPTED that started after the newer one's first fenced read
//    had returned -- the resource knew the newer token and still took the older one. A
//    refused write is what fencing is for and is allowed; so is a write that reached the
//    resource between the newer grant and that read: no fence can refuse a token it has not
//    seen, and the newer holder then reads the value it wrote (no update is lost -- the
//    lost_update rule checks that).
//  - held_after_regrant: a holder's loss-signal check said "held" although it started after
//    another holder's grant -- the holder was not told in time (stale or not, refused or not).
//  - write_after_lost: a holder wrote after it had seen its own loss signal.
//  - wrong_token / write_outside_section / bad_sequence / unterminated: a worker broke the
//    acquire -> read -> write -> release protocol (worker or driver bug).
//  - lost_update: an accepted write's value is not the previous accepted value + 1.
//  - final_value: the register's final value differs from its number of accepted writes.
//  - log_mismatch: a logged write the register did not see, or a register write no log
//    shows (allowed only for a worker killed before it could log it).
// A critical section runs from `granted` to the first of lost / released / killed / exited.
//
// With limit N > 1 (a semaphore of N permits, no fenced register: N holders at once are
// allowed) the register rules and token_order do not apply (several waiters granted by one
// release log their grants in any order; tokens stay unique), and the lock-level rules become:
//  - overlap: more than N sections at once that all ended normally (released, no loss seen):
//    the service granted an N+1th permit while N live holders held theirs.
//  - held_after_regrant: a section that did not end normally was told "held" at an instant
//    when N other sections that did end normally were open: it was the stale one, and was
//    told so too late. (Sections that ended by loss or kill are otherwise excused: without a
//    fence, which of several of them was stale cannot be told apart.)

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fault/history.hpp"

namespace dlock::fault {

struct violation {
  std::string rule;
  std::string detail;
};

struct check_result {
  std::vector<violation> violations;
  std::size_t sections{0};  // critical sections granted
  std::size_t accepted_writes{0};
  std::size_t refused_writes{0};  // stale writes the resource refused
  std::size_t refused_reads{0};   // stale holders' reads the resource refused
  std::size_t lost_seen{0};       // sections that ended by the holder seeing its loss
};

check_result check(const history& h, std::uint32_t limit = 1);

// One line per violation, for test output and the run report.
std::string describe(const std::vector<violation>& v, std::size_t max_lines = 20);

}  // namespace dlock::fault
