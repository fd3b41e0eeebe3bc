// The checker is only worth its verdicts if it is shown to catch each violation: every test
// below hand-builds a history containing one kind of violation (or a tricky legal one).
#include "fault/checker.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dlock::fault {
namespace {

// Builds histories step by step; each event is 10 ns after the previous one.
class builder {
 public:
  history h;

  std::int64_t ev(const std::string& w, step s, std::uint64_t token = 0, std::int64_t value = 0,
                  bool accepted = false) {
    t_ += 10;
    if (s == step::read) accepted = true;  // see refused_read()
    h.events.push_back({t_, w, pid_of(w), s, token, value, accepted, {}});
    return t_;
  }
  void refused_read(const std::string& w) {
    ev(w, step::read);
    h.events.back().accepted = false;
  }
  // The register's own record of a write (and its state when accepted).
  void reg(const std::string& w, std::uint64_t token, std::int64_t value, bool accepted) {
    h.writes.push_back({static_cast<std::int64_t>(h.writes.size() + 1), token, value, accepted,
                        pid_of(w), pid_of(w), t_});
    if (accepted) h.final_value = value;
  }
  // A write as both the worker and the register saw it.
  void write(const std::string& w, std::uint64_t token, std::int64_t value, bool accepted) {
    ev(w, step::write, token, value, accepted);
    reg(w, token, value, accepted);
  }
  // A complete, correct critical section reading `value` and writing value + 1.
  void section(const std::string& w, std::uint64_t token, std::int64_t value) {
    ev(w, step::acquire_start);
    ev(w, step::granted, token);
    ev(w, step::read, 0, value);
    ev(w, step::checked, token);
    write(w, token, value + 1, true);
    ev(w, step::released, token);
  }

 private:
  static pid_t pid_of(const std::string& w) {
    return static_cast<pid_t>(100 + std::hash<std::string>{}(w) % 1000);
  }
  std::int64_t t_{1000};
};

std::vector<std::string> rules(const check_result& r) {
  std::vector<std::string> out;
  for (auto& v : r.violations) out.push_back(v.rule);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

using R = std::vector<std::string>;

TEST(Checker, CleanHistoryPasses) {
  builder b;
  b.section("w1", 1, 0);
  b.section("w2", 2, 1);
  b.section("w1", 3, 2);
  b.ev("w3", step::acquire_start);
  b.ev("w3", step::acquire_failed);
  b.section("w3", 5, 3);  // tokens may skip (an abandoned waiter used 4)
  auto r = check(b.h);
  EXPECT_TRUE(r.violations.empty()) << describe(r.violations);
  EXPECT_EQ(r.sections, 4u);
  EXPECT_EQ(r.accepted_writes, 4u);
  EXPECT_EQ(r.refused_writes, 0u);
}

TEST(Checker, PausedHolderWhoseStaleWriteIsRefusedPasses) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.ev("a", step::stopped);
  b.section("b", 2, 0);  // a's lease lapsed; b holds, writes 1
  b.ev("a", step::continued);
  b.write("a", 1, 1, false);  // refused by the fence
  b.ev("a", step::lost, 1);
  b.ev("a", step::released, 1);
  auto r = check(b.h);
  EXPECT_TRUE(r.violations.empty()) << describe(r.violations);
  EXPECT_EQ(r.refused_writes, 1u);
  EXPECT_EQ(r.lost_seen, 1u);
}

TEST(Checker, StaleHolderWhoseReadIsRefusedPasses) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::stopped);
  b.section("b", 2, 0);
  b.ev("a", step::continued);
  b.refused_read("a");
  b.ev("a", step::lost, 1);
  b.ev("a", step::released, 1);
  auto r = check(b.h);
  EXPECT_TRUE(r.violations.empty()) << describe(r.violations);
  EXPECT_EQ(r.refused_reads, 1u);
}

TEST(Checker, KilledHolderWithUnloggedWritePasses) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.reg("a", 1, 1, true);  // applied, then killed before logging it
  b.ev("a", step::killed);
  b.section("b", 2, 1);
  auto r = check(b.h);
  EXPECT_TRUE(r.violations.empty()) << describe(r.violations);
}

TEST(Checker, CatchesTokensNotIncreasing) {
  builder b;
  b.section("a", 5, 0);
  b.section("b", 3, 1);
  EXPECT_EQ(rules(check(b.h)), R{"token_order"});
}

TEST(Checker, CatchesOverlapOfNormallyReleasedSections) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.write("a", 1, 1, true);
  b.section("b", 2, 1);  // granted while a still holds
  b.ev("a", step::released, 1);
  EXPECT_EQ(rules(check(b.h)), R{"overlap"});
}

TEST(Checker, CatchesStaleWriteAcceptedAfterNewerGrant) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.ev("b", step::acquire_start);
  b.ev("b", step::granted, 2);
  b.ev("b", step::read, 0, 0);
  b.write("a", 1, 1, true);  // b has not written yet: the fence cannot refuse it
  b.ev("a", step::lost, 1);
  b.ev("a", step::released, 1);
  b.write("b", 2, 1, true);
  b.ev("b", step::released, 2);
  auto r = rules(check(b.h));
  EXPECT_TRUE(std::ranges::count(r, "stale_write_accepted")) << testing::PrintToString(r);
  // The lost increment is caught on the register's side too.
  EXPECT_TRUE(std::ranges::count(r, "lost_update")) << testing::PrintToString(r);
}

// What CI's fault_run_zk met once (expire holder): the old holder's write landed 92 us after
// the newer grant, before the newer holder's first read reached the resource. No fence can
// refuse a token it has not seen; the newer holder then read that write's value, so nothing
// was lost. Flagging it made a correct run fail whenever the machine was slow.
TEST(Checker, AStaleWriteBeforeTheNewerHolderReachesTheResourceIsNotAViolation) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.ev("b", step::acquire_start);
  b.ev("b", step::granted, 2);
  b.write("a", 1, 1, true);  // after b's grant, before b's read: accepted, legitimately
  b.ev("b", step::read, 0, 1);
  b.write("a", 1, 2, false);  // after b's read: the fence refuses it
  b.ev("a", step::lost, 1);
  b.ev("a", step::released, 1);
  b.ev("b", step::checked, 2);
  b.write("b", 2, 2, true);
  b.ev("b", step::released, 2);
  EXPECT_EQ(rules(check(b.h)), R{});
}

TEST(Checker, CatchesHolderToldItHeldAfterAnotherWasGranted) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.ev("a", step::stopped);
  b.section("b", 2, 0);
  b.ev("a", step::continued);
  b.ev("a", step::checked, 1);  // is_held() said yes: a lie, b was granted before
  b.write("a", 1, 1, false);    // the fence saved the data, not the library
  b.ev("a", step::lost, 1);
  b.ev("a", step::released, 1);
  EXPECT_EQ(rules(check(b.h)), R{"held_after_regrant"});
}

TEST(Checker, CatchesWriteAfterOwnLossSignal) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.ev("a", step::lost, 1);
  b.write("a", 1, 1, true);
  b.ev("a", step::released, 1);
  EXPECT_EQ(rules(check(b.h)), R{"write_after_lost"});
}

TEST(Checker, CatchesGrantWithoutAcquire) {
  builder b;
  b.ev("a", step::granted, 1);
  b.ev("a", step::read, 0, 0);
  b.write("a", 1, 1, true);
  b.ev("a", step::released, 1);
  EXPECT_EQ(rules(check(b.h)), R{"fake_grant"});
}

TEST(Checker, CatchesTokenGrantedTwice) {
  builder b;
  b.section("a", 1, 0);
  b.ev("b", step::acquire_start);
  b.ev("b", step::granted, 1);
  b.ev("b", step::released, 1);
  auto r = rules(check(b.h));
  EXPECT_TRUE(std::ranges::count(r, "fake_grant")) << testing::PrintToString(r);
}

TEST(Checker, CatchesAcceptedWriteOfTokenNeverGranted) {
  builder b;
  b.section("a", 1, 0);
  b.reg("ghost", 7, 2, true);
  auto r = rules(check(b.h));
  EXPECT_TRUE(std::ranges::count(r, "fake_grant")) << testing::PrintToString(r);
}

TEST(Checker, CatchesLostUpdate) {
  builder b;
  b.section("a", 1, 0);
  b.section("b", 2, 0);  // read a stale value: the increment of a is lost
  auto r = rules(check(b.h));
  EXPECT_EQ(r, (R{"final_value", "lost_update"}));
}

TEST(Checker, CatchesFinalValueMismatch) {
  builder b;
  b.section("a", 1, 0);
  b.section("b", 2, 1);
  b.h.final_value = 5;
  EXPECT_EQ(rules(check(b.h)), R{"final_value"});
}

TEST(Checker, CatchesLoggedWriteTheRegisterNeverSaw) {
  builder b;
  b.section("a", 1, 0);
  b.ev("b", step::acquire_start);
  b.ev("b", step::granted, 2);
  b.ev("b", step::read, 0, 1);
  b.ev("b", step::write, 2, 2, true);  // claimed, but not in the register
  b.ev("b", step::released, 2);
  EXPECT_EQ(rules(check(b.h)), R{"log_mismatch"});
}

TEST(Checker, CatchesRegisterWriteNoLogShows) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  b.reg("a", 1, 1, true);  // the worker lived on and released without logging it
  b.ev("a", step::released, 1);
  EXPECT_EQ(rules(check(b.h)), R{"log_mismatch"});
}

TEST(Checker, CatchesSectionThatNeverEnds) {
  builder b;
  b.ev("a", step::acquire_start);
  b.ev("a", step::granted, 1);
  EXPECT_EQ(rules(check(b.h)), R{"unterminated"});
}

TEST(Checker, CatchesProtocolBreaks) {
  builder b;
  b.ev("a", step::read, 0, 0);
  b.write("a", 1, 1, true);
  auto r = rules(check(b.h));
  EXPECT_TRUE(std::ranges::count(r, "bad_sequence")) << testing::PrintToString(r);
  EXPECT_TRUE(std::ranges::count(r, "write_outside_section")) << testing::PrintToString(r);
}

TEST(History, LinesRoundTrip) {
  event r{5, "w1", 7, step::read, 0, 3, false, {}};
  EXPECT_FALSE(parse(format(r))->accepted);
  EXPECT_EQ(parse(format(r))->value, 3);
  event e{123456789, "w3", 4242, step::write, 17, 5, true, {}};
  auto back = parse(format(e));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ns, e.ns);
  EXPECT_EQ(back->worker, "w3");
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->what, step::write);
  EXPECT_EQ(back->token, 17u);
  EXPECT_EQ(back->value, 5);
  EXPECT_TRUE(back->accepted);
  event f{1, "w1.2", 7, step::acquire_failed, 0, 0, false, "timed_out after 1 s"};
  EXPECT_EQ(parse(format(f))->detail, "timed_out after 1 s");
  EXPECT_FALSE(parse("123 w1 7 granted"));        // token missing
  EXPECT_FALSE(parse("123 w1 7 gran"));           // torn line of a killed worker
  EXPECT_FALSE(parse("12x w1 7 acquire_start"));  // bad timestamp
}

// A semaphore of 2 permits, no register: two holders at once are fine, a third live one is
// an overlap, and a stale (later lost) holder told "held" while two live ones held is caught.
TEST(Checker, WithTwoPermitsTwoHoldersPassAndAThirdIsCaught) {
  auto grant = [](builder& b, const std::string& w, std::uint64_t token) {
    b.ev(w, step::acquire_start);
    b.ev(w, step::granted, token);
  };
  builder ok;
  grant(ok, "w1", 1);
  grant(ok, "w2", 2);
  ok.ev("w1", step::checked, 1);
  ok.ev("w2", step::checked, 2);
  ok.ev("w1", step::released, 1);
  grant(ok, "w3", 3);  // w1 gave its permit back first
  ok.ev("w3", step::released, 3);
  ok.ev("w2", step::released, 2);
  EXPECT_TRUE(check(ok.h, 2).violations.empty()) << describe(check(ok.h, 2).violations);
  EXPECT_EQ(rules(check(ok.h, 1)), (R{"held_after_regrant", "overlap"}))
      << "the same history is two holders of a lock";

  builder three;
  grant(three, "w1", 1);
  grant(three, "w2", 2);
  grant(three, "w3", 3);
  for (auto* w : {"w1", "w2", "w3"}) three.ev(w, step::released);
  EXPECT_EQ(rules(check(three.h, 2)), R{"overlap"});

  builder stale;  // w1 paused past its lease: w2 and w3 hold both permits when w1 checks
  grant(stale, "w1", 1);
  stale.ev("w1", step::stopped);
  grant(stale, "w2", 2);
  grant(stale, "w3", 3);
  stale.ev("w1", step::checked, 1);
  stale.ev("w1", step::lost, 1);
  stale.ev("w1", step::released, 1);
  stale.ev("w2", step::released, 2);
  stale.ev("w3", step::released, 3);
  EXPECT_EQ(rules(check(stale.h, 2)), R{"held_after_regrant"});

  builder told;  // the same, but w1 learns of its loss at its check: legal
  grant(told, "w1", 1);
  grant(told, "w2", 2);
  grant(told, "w3", 3);
  told.ev("w1", step::lost, 1);
  told.ev("w1", step::released, 1);
  told.ev("w2", step::released, 2);
  told.ev("w3", step::released, 3);
  EXPECT_TRUE(check(told.h, 2).violations.empty()) << describe(check(told.h, 2).violations);
}

}  // namespace
}  // namespace dlock::fault
