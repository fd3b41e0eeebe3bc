#pragma once
// What the libdlock-prometheus tests share: a scrape of the registry's text exposition,
// `promtool check metrics` on it, and one backend's story told through real sessions.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cstdio>
#include <dlock/dlock.hpp>
#include <dlock/prometheus.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {

using namespace std::chrono_literals;

// The registry's exposition, and its samples by "name{k="v",...}" (labels in key order, as
// prometheus-cpp writes them).
struct scrape {
  std::string text;
  std::map<std::string, double> samples;

  explicit scrape(prometheus::Registry& r) {
    text = prometheus::TextSerializer().Serialize(r.Collect());
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      auto sp = line.rfind(' ');
      samples[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    }
  }
  // The sample's value; -1 when the series does not exist (so that "0" is told apart).
  double operator()(const std::string& name,
                    const std::map<std::string, std::string>& labels) const {
    std::string key = name;
    if (!labels.empty()) {
      key += '{';
      for (auto& [k, v] : labels) key += k + "=\"" + v + "\",";
      key.back() = '}';
    }
    auto it = samples.find(key);
    return it == samples.end() ? -1 : it->second;
  }
};

// `promtool check metrics` on the exposition: its output (empty when it passed), or why not.
inline std::string promtool_problems(const std::string& text) {
  temp_dir dir("dlock-prom");
  const auto file = dir.path() + "/metrics.prom";
  std::ofstream(file) << text;
  const auto cmd = "promtool check metrics < '" + file + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "cannot run promtool";
  std::string out;
  char buf[512];
  while (auto n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  if (status != 0 && out.empty()) out = "promtool exited with status " + std::to_string(status);
  return status == 0 ? out : "exit " + std::to_string(status) + ": " + out;
}

// One backend's story, the same on each: a labelled lock granted and released; an unlabelled
// one found busy (try_lock), timed out (try_lock_for), granted, then lost with its session.
inline void run_story(const std::string& url, const std::string& backend,
                      const dlock::prometheus_metrics& metrics, prometheus::Registry& registry,
                      const std::function<void(const dlock::session&)>& expire) {
  const auto unlabelled = "job-" + random_suffix();
  auto a = dlock::session::open(url, {.observer = metrics.observer_for(url)});
  auto b = dlock::session::open(url);  // no observer: counts nothing
  {
    dlock::mutex m(a, "labelled");
    m.lock();
    std::this_thread::sleep_for(20ms);
    m.unlock();
  }
  dlock::mutex theirs(b, unlabelled);
  dlock::mutex mine(a, unlabelled);
  theirs.lock();
  EXPECT_FALSE(mine.try_lock());
  const auto timed_from = std::chrono::steady_clock::now();
  EXPECT_FALSE(mine.try_lock_for(50ms));
  const std::chrono::duration<double> timed_wait = std::chrono::steady_clock::now() - timed_from;
  theirs.unlock();
  mine.lock();

  const std::map<std::string, std::string> be{{"backend", backend}};
  const std::map<std::string, std::string> lab{{"backend", backend}, {"lock", "labelled"}};
  auto with = [](auto labels, const char* k, const char* v) {
    labels[k] = v;
    return labels;
  };
  {
    scrape s(registry);
    EXPECT_EQ(s("dlock_holds", be), 1) << s.text;
    EXPECT_EQ(s("dlock_holds", lab), 0) << s.text;
    EXPECT_EQ(s("dlock_acquire_total", with(lab, "result", "granted")), 1);
    EXPECT_EQ(s("dlock_acquire_total", with(be, "result", "granted")), 1);
    EXPECT_EQ(s("dlock_acquire_total", with(be, "result", "would_block")), 1);
    EXPECT_EQ(s("dlock_acquire_total", with(be, "result", "timed_out")), 1);
    EXPECT_EQ(s("dlock_acquire_wait_seconds_count", with(be, "result", "timed_out")), 1);
    // The engine never gives up before the deadline, but its clock starts when acquire is
    // entered, after try_lock_for set the deadline: a caller preempted in between (a loaded
    // CI machine: 0.5 ms) shows a little less than 50 ms. Never more than the caller saw.
    const double timed_sum = s("dlock_acquire_wait_seconds_sum", with(be, "result", "timed_out"));
    EXPECT_GE(timed_sum, 0.045);
    EXPECT_LE(timed_sum, timed_wait.count());
    EXPECT_EQ(s("dlock_hold_seconds_count", lab), 1);
    EXPECT_GE(s("dlock_hold_seconds_sum", lab), 0.02);
    EXPECT_EQ(s("dlock_hold_seconds_count", be), -1) << "nothing unlabelled was released yet";
    EXPECT_EQ(s("dlock_session_state", with(be, "state", "live")), 1);
    EXPECT_GE(s("dlock_backend_request_seconds_count", with(be, "operation", "enqueue")), 3);
    EXPECT_EQ(s.text.find(unlabelled), std::string::npos) << "an unlisted name became a label";
  }

  expire(a);
  ASSERT_TRUE(poll_until([&] { return a.state() == dlock::session_state::expired; }));
  // The holds are told first, then the connections are cut, then the session's state is
  // published: wait for both to be counted, so that the release below finds the hold already
  // lost (else it is counted as found at the release) and the gauge is read after its change.
  ASSERT_TRUE(poll_until([&] {
    scrape now(registry);
    return now("dlock_lost_total", with(be, "reason", "session_expired")) == 1 &&
           now("dlock_session_state", with(be, "state", "expired")) == 1;
  })) << scrape(registry).text;
  std::error_code ec;
  mine.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost);
  scrape s(registry);
  EXPECT_EQ(s("dlock_lost_total", with(be, "reason", "session_expired")), 1) << s.text;
  EXPECT_EQ(s("dlock_lost_total", with(be, "reason", "found_at_release")), -1) << s.text;
  EXPECT_EQ(s("dlock_holds", be), 0);
  EXPECT_EQ(s("dlock_hold_seconds_count", be), 1);
  EXPECT_EQ(s("dlock_session_state", with(be, "state", "live")), 0);
  EXPECT_EQ(s("dlock_session_state", with(be, "state", "expired")), 1);
}

}  // namespace dlock::test
