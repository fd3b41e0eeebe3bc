#include "fault/history.hpp"

#include <array>
#include <charconv>
#include <fstream>
#include <utility>

namespace dlock::fault {
namespace {

constexpr std::array<std::pair<step, const char*>, 12> names{{
    {step::acquire_start, "acquire_start"},
    {step::granted, "granted"},
    {step::read, "read"},
    {step::checked, "checked"},
    {step::write, "write"},
    {step::lost, "lost"},
    {step::released, "released"},
    {step::killed, "killed"},
    {step::stopped, "stopped"},
    {step::continued, "continued"},
    {step::exited, "exited"},
    {step::acquire_failed, "acquire_failed"},
}};

template <class T>
bool to_number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

std::string_view next_word(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  auto sp = s.find(' ');
  auto w = s.substr(0, sp);
  s = sp == std::string_view::npos ? std::string_view{} : s.substr(sp);
  return w;
}

}  // namespace

const char* to_string(step s) noexcept {
  for (auto& [k, n] : names) {
    if (k == s) return n;
  }
  return "?";
}

std::optional<step> step_from(std::string_view s) noexcept {
  for (auto& [k, n] : names) {
    if (s == n) return k;
  }
  return std::nullopt;
}

std::string format(const event& e) {
  std::string s =
      std::to_string(e.ns) + " " + e.worker + " " + std::to_string(e.pid) + " " + to_string(e.what);
  switch (e.what) {
    case step::granted:
    case step::checked:
    case step::lost:
    case step::released:
      s += " token=" + std::to_string(e.token);
      break;
    case step::read:
      s += " value=" + std::to_string(e.value) +
           (e.accepted ? " result=accepted" : " result=refused");
      break;
    case step::write:
      s += " token=" + std::to_string(e.token) + " value=" + std::to_string(e.value) +
           (e.accepted ? " result=accepted" : " result=refused");
      break;
    default:
      break;
  }
  if (!e.detail.empty()) s += " detail=" + e.detail;
  return s;
}

std::optional<event> parse(std::string_view line) {
  event e;
  std::string_view rest = line;
  if (!to_number(next_word(rest), e.ns)) return std::nullopt;
  e.worker = std::string(next_word(rest));
  if (e.worker.empty() || !to_number(next_word(rest), e.pid)) return std::nullopt;
  auto what = step_from(next_word(rest));
  if (!what) return std::nullopt;
  e.what = *what;
  bool has_token = false, has_value = false, has_result = false;
  while (!rest.empty()) {
    auto w = next_word(rest);
    if (w.empty()) break;
    auto eq = w.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    auto k = w.substr(0, eq), v = w.substr(eq + 1);
    if (k == "token") {
      if (!to_number(v, e.token)) return std::nullopt;
      has_token = true;
    } else if (k == "value") {
      if (!to_number(v, e.value)) return std::nullopt;
      has_value = true;
    } else if (k == "result") {
      if (v != "accepted" && v != "refused") return std::nullopt;
      e.accepted = v == "accepted";
      has_result = true;
    } else if (k == "detail") {
      // The detail runs to the end of the line.
      e.detail = std::string(v) + std::string(rest);
      break;
    }
  }
  switch (e.what) {
    case step::granted:
    case step::checked:
    case step::lost:
    case step::released:
      if (!has_token) return std::nullopt;
      break;
    case step::read:
    case step::write:
      if ((e.what == step::write && !has_token) || !has_value || !has_result) return std::nullopt;
      break;
    default:
      break;
  }
  return e;
}

std::size_t load_log(const std::string& path, std::vector<event>& out) {
  std::ifstream f(path);
  std::string line;
  std::size_t bad = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    if (auto e = parse(line))
      out.push_back(std::move(*e));
    else
      ++bad;
  }
  return bad;
}

}  // namespace dlock::fault
