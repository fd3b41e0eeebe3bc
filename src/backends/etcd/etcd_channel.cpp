#include "backends/etcd/etcd_channel.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace dlock::detail::etcd {
namespace {

bool contains_nocase(std::string_view text, std::string_view word) {
  return std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

// gRPC reports a failed handshake as UNAVAILABLE, like a member that is down; only its text
// tells them apart: "Ssl handshake failed" (a server certificate refused), "tcp handshaker
// shutdown" or "Endpoint read failed" (the server refusing the client's certificate, or its
// absence, after TLS 1.3 ended the handshake on the client's side). A member that is down says
// "Connection refused". Retrying would never mend a certificate, so say what it is at once.
bool tls_refused(const grpc::Status& s) {
  const std::string& m = s.error_message();
  for (std::string_view w : {"handshake", "certificate", "SSL_ERROR", "Endpoint read failed"})
    if (contains_nocase(m, w)) return true;
  return false;
}

}  // namespace

// gRPC reconnects after a lost connection with an exponential backoff of up to two minutes
// by default: far past any lease. Retry within a fraction of the request timeout instead.
//
// GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is no backoff in gRPC 1.51 but the *minimum connect
// timeout*: an attempt (TCP connect, TLS, the preface and the server's HTTP/2 SETTINGS) gets
// max(its backoff, this) and is then given up. At 100 ms an attempt had 100-250 ms, and a member
// 300 ms of round trip away was never reached ("connection attempt timed out before receiving
// SETTINGS frame": etcd_reconnect.a_member_behind_a_slow_link_is_reached). 1 s: a silent
// first member of several still gives way to the next within about a second.
namespace {
std::atomic<pid_t> grpc_used_by{0};
}  // namespace

result<void> refuse_in_forked_child() {
  const pid_t by = grpc_used_by.load();
  if (by == 0 || by == ::getpid()) return {};
  return fail(errc::unsupported,
              "etcd: this process is a fork of process " + std::to_string(by) +
                  ", which used gRPC; gRPC cannot be used across fork() (its threads and "
                  "descriptors stay with the parent, and the child's calls would hang or break "
                  "the parent's): exec a new program in the child (posix_spawn, or fork + exec), "
                  "or fork before the parent opens an etcd session");
}

result<void> refuse_short_of_descriptors() {
  // gRPC aborts the whole process when its start cannot get a descriptor (epoll_create1,
  // eventfd: a tester's dlock run at ulimit -n 6-8 died of SIGABRT in session::open). Ask for
  // a few first and give them back; short of them, refuse as any backend out of resources.
  constexpr int wanted = 8;
  std::vector<int> got;
  int error = 0;
  while (static_cast<int>(got.size()) < wanted) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = errno;
      break;
    }
    got.push_back(fd);
  }
  for (int fd : got) ::close(fd);
  if (error != EMFILE && error != ENFILE) return {};
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  return fail(errc::backend_unavailable,
              "etcd: too few file descriptors to start gRPC, which aborts the process without "
              "them: " +
                  std::to_string(got.size()) + " free, " + std::to_string(wanted) + " needed (" +
                  std::strerror(error) + "; ulimit -n is " + std::to_string(lim.rlim_cur) + ")");
}

std::shared_ptr<grpc::Channel> make_channel(const config& c) {
  pid_t none = 0;
  (void)grpc_used_by.compare_exchange_strong(none, ::getpid());
  grpc::ChannelArguments a;
  const int cap =
      static_cast<int>(std::clamp<std::int64_t>(c.request_timeout.count() / 20, 100, 250));
  a.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  a.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  a.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, cap);
  // A member that stops answering with its connection open (frozen, a paused VM, a black hole)
  // kept the channel: every keep-alive ended at its deadline and was retried on it, and a holder
  // was told lost at its TTL while two members answered (an outside tester). Once the member
  // has said nothing for ping_after (longer than a renewal's interval: every read resets the
  // timer, so a healthy member is never pinged, and etcd's limit on pings, one per 5 s and none
  // without a call open, is never met), a ping unanswered for 2 s closes the connection and
  // pick_first moves on (a silent member's connect attempt gives up after 1 s): about
  // TTL/3 + 4 s in all, within the lease for a TTL of about 7 s or more.
  if (c.ping_after.count() > 0) {
    const int after = static_cast<int>(c.ping_after.count());
    a.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, after);
    a.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
    a.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    a.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    a.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, after);
  }
  // An ipv4:/ipv6: list's own authority would be the whole list; TLS checks the server's
  // certificate against the authority's host, so name the first member as given.
  a.SetString(GRPC_ARG_DEFAULT_AUTHORITY, c.authority);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (c.tls) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = c.ca_pem;  // "": gRPC's default roots
    o.pem_private_key = c.key_pem;
    o.pem_cert_chain = c.cert_pem;
    creds = grpc::SslCredentials(o);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(c.target, creds, a);
}

failure status_failure(const grpc::Status& s, std::string_view what, const config& c,
                       bool answered) {
  std::string msg = "etcd " + std::string(what) + ": " + s.error_message() + " (gRPC status " +
                    std::to_string(static_cast<int>(s.error_code())) + ")";
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (c.tls && !answered && tls_refused(s)) {
        std::string ca = c.ca_file.empty() ? "the system's CAs" : "the CA in '" + c.ca_file + "'";
        return {make_error_code(errc::permission_denied),
                "etcd " + std::string(what) + ": TLS with " + c.authority +
                    " failed (a server certificate not signed by " + ca +
                    " or not naming the member, a client certificate refused or missing, or "
                    "a member that does not speak TLS: etcd:// then): " +
                    s.error_message()};
      }
      [[fallthrough]];
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:
      return {make_error_code(errc::backend_unavailable), std::move(msg)};
    case grpc::StatusCode::NOT_FOUND:
      // "etcdserver: requested lease not found": the lease expired or was revoked.
      if (s.error_message().find("lease not found") != std::string::npos) {
        return {make_error_code(errc::session_expired), std::move(msg)};
      }
      return {make_error_code(errc::backend_error), std::move(msg)};
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return {make_error_code(errc::permission_denied), std::move(msg)};
    case grpc::StatusCode::INVALID_ARGUMENT:
      // Auth enabled on the server and no user in the URL.
      if (s.error_message().find("user name is empty") != std::string::npos) {
        return {make_error_code(errc::permission_denied),
                std::move(msg) + "; the cluster requires a user: etcd://user:password@host"};
      }
      return {make_error_code(errc::backend_error), std::move(msg)};
    default:
      return {make_error_code(errc::backend_error), std::move(msg)};
  }
}

bool stale_token(const grpc::Status& s) {
  const std::string& m = s.error_message();
  return m.find("invalid auth token") != std::string::npos ||
         m.find("revision of auth store is old") != std::string::npos;
}

}  // namespace dlock::detail::etcd
