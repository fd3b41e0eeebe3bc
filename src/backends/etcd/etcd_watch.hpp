#pragma once
// One Watch stream per session, shared by all its waiters (issue 15: "one watch stream
// multiplexed per session, honouring cancellation"). Each wait creates its watches on that
// stream under ids of its own (WatchCreateRequest.watch_id), a reader thread hands each event
// to the wait whose watch it is, and a wait that ends -- an event, its deadline, its
// stop_token, close() -- cancels its watches. A stream that breaks (a member killed, a
// connection reset) is opened again, through the same channel, with every watch still wanted
// created again from the revision it first asked for: a deletion while the stream was down is
// replayed, never missed. A watch the server cancels because that revision was compacted is
// created again from the compaction revision (what is left of the key's history).
//
// Thread safety: every member may be called from any thread; waits block only their caller.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <string>

#include "backends/etcd/etcd_client.hpp"

namespace grpc {
class Channel;
class ClientContext;
class Status;
}  // namespace grpc

namespace dlock::detail::etcd {

// What the hub asks of the client it belongs to.
struct watch_hooks {
  // Registers a stream's context for shut-down and gives it the auth token (returns it);
  // fails once the client is closed.
  std::function<result<std::string>(grpc::ClientContext&)> begin;
  // The stream has ended (its context is about to go).
  std::function<void(grpc::ClientContext&)> end;
  // The server refused `token` (a stream ended with this status, or a watch was refused):
  // log in again if that is why.
  std::function<void(const grpc::Status&, const std::string& token)> refused;
};

// Whether `key` still exists as the incarnation created at `create_revision` (false: gone or
// created anew); an error when it cannot be read.
using key_check = std::function<result<bool>(const std::string& key, std::int64_t create_revision)>;

class watch_hub {
 public:
  watch_hub(std::shared_ptr<grpc::Channel> channel, watch_hooks hooks);
  ~watch_hub();
  watch_hub(const watch_hub&) = delete;
  watch_hub& operator=(const watch_hub&) = delete;

  // Until one of `keys` is deleted (true), or `deadline`, `stop` or shut_down() (false).
  // With `still_there`, a key whose create revision is known is watched from the present on
  // an open stream and checked with it once the watch is in place (false, not an error, if
  // the check fails: the caller lists again).
  result<bool> await_delete(std::span<const watched_key> keys, steady::time_point deadline,
                            std::stop_token stop, const key_check& still_there = {});
  // Until a key of [begin, end) changes after `from_revision` (true: or the watch was
  // cancelled, which may hide a change), or `deadline`, `stop` or shut_down() (false).
  result<bool> await_change(const std::string& begin, const std::string& end,
                            std::int64_t from_revision, steady::time_point deadline,
                            std::stop_token stop);

  // Ends every wait (false) and the stream; the reader thread is joined by the destructor.
  void shut_down() noexcept;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace dlock::detail::etcd
