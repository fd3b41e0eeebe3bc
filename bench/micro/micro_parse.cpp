// Parsing done on every session open and every lock construction: URLs, durations, lock names.
#include <benchmark/benchmark.h>

#include <string>

#include "core/duration.hpp"
#include "core/names.hpp"
#include "core/url.hpp"

namespace {

void BM_parse_url_simple(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(dlock::detail::parse_url("redis://127.0.0.1:6379"));
}

void BM_parse_url_full(benchmark::State& state) {
  const std::string u =
      "zk://user:p%40ss@zk1.example:2181,zk2.example:2181,zk3.example:2181/app/locks"
      "?ttl=30s&keepalive=5s";
  for (auto _ : state) benchmark::DoNotOptimize(dlock::detail::parse_url(u));
}

void BM_parse_duration(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(dlock::detail::parse_duration("1h2m30s500ms"));
}

void BM_format_duration(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(dlock::detail::format_duration(std::chrono::milliseconds(90500)));
  }
}

void BM_validate_name(benchmark::State& state) {
  const std::string name(static_cast<std::size_t>(state.range(0)), 'n');
  for (auto _ : state) benchmark::DoNotOptimize(dlock::detail::validate_lock_name(name));
}

void BM_validate_name_utf8(benchmark::State& state) {
  std::string name;
  while (name.size() + 3 <= 255) name += "\xe9\x94\x81";  // U+9501, three bytes
  for (auto _ : state) benchmark::DoNotOptimize(dlock::detail::validate_lock_name(name));
}

BENCHMARK(BM_parse_url_simple);
BENCHMARK(BM_parse_url_full);
BENCHMARK(BM_parse_duration);
BENCHMARK(BM_format_duration);
BENCHMARK(BM_validate_name)->Arg(8)->Arg(64)->Arg(255);
BENCHMARK(BM_validate_name_utf8);

}  // namespace
