#pragma once
// The shared state behind memory:// sessions of one NAME.

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

struct memory_entry {
  entry e;
  std::string session;
};

struct memory_store {
  std::mutex mu;
  std::condition_variable_any changed;
  std::function<steady::time_point()> clock = [] { return steady::now(); };
  std::map<std::string, std::vector<memory_entry>, std::less<>> queues;
  std::map<std::string, std::uint64_t, std::less<>> tokens;  // kept forever: tokens never repeat
  std::map<std::string, steady::time_point, std::less<>> leases;  // session id -> lease end

  // Drops sessions whose lease ended and their entries. Caller holds mu.
  void purge();
  bool alive(const std::string& session) const;
};

std::shared_ptr<memory_store> memory_store_named(const std::string& name);

}  // namespace dlock::detail
