// etcds://: real members serving TLS with certificates made by the test (etcd_pki), one
// without and one with --client-cert-auth; the CLI's exit status for a refused handshake; and
// members given by host name.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>

#include "../cli/cli_harness.hpp"
#include "etcd/etcd_env.hpp"
#include "etcd/etcd_pki.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

etcd_pki& pki() {
  static etcd_pki p;
  return p;
}

etcd_server& tls_server() {
  static etcd_server s(
      etcd_tls{pki().server_cert(), pki().server_key(), pki().ca(), false, {}, {}});
  return s;
}

etcd_server& client_auth_server() {
  static etcd_server s(etcd_tls{pki().server_cert(), pki().server_key(), pki().ca(), true,
                                pki().client_cert(), pki().client_key()});
  return s;
}

std::string tls_url(const etcd_server& s, const std::string& host, const std::string& query) {
  return "etcds://" + host + ":" + std::to_string(s.port()) + "/tls?ttl=3s&" + query;
}

std::string with_client_cert() {
  return "cacert=" + pki().ca() + "&cert=" + pki().client_cert() + "&key=" + pki().client_key();
}

// One lock and unlock over `url`, and the key it made while held.
void lock_and_unlock(const std::string& url, const etcd_server& server) {
  auto s = session::open(url);
  dlock::mutex m(s, "job");
  ASSERT_TRUE(m.try_lock_for(5s));
  EXPECT_GT(m.token().value, 0u);
  EXPECT_EQ(server.keys("tls/job/").size(), 1u);
  m.unlock();
  EXPECT_TRUE(server.keys("tls/job/").empty());
  s.close();
}

// The error session::open (or the first call) gives for `url`.
std::error_code open_error(const std::string& url, std::string* what = nullptr) {
  try {
    auto s = session::open(url);
    (void)inspect(s, "job");
  } catch (const std::system_error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return {};
}

TEST(EtcdTls, LocksAndUnlocksOverTlsByAddressAndByName) {
  lock_and_unlock(tls_url(tls_server(), "127.0.0.1", "cacert=" + pki().ca()), tls_server());
  lock_and_unlock(tls_url(tls_server(), "localhost", "cacert=" + pki().ca()), tls_server());
}

TEST(EtcdTls, AWrongCaIsPermissionDeniedAndExit77) {
  const auto url = tls_url(tls_server(), "127.0.0.1", "cacert=" + pki().other_ca());
  std::string what;
  EXPECT_EQ(open_error(url, &what), make_error_code(errc::permission_denied)) << what;
  EXPECT_NE(what.find("TLS"), std::string::npos) << what;
  EXPECT_NE(what.find(pki().other_ca()), std::string::npos) << what;
  cli_sandbox box;
  auto r = box.run({"status", "--url", url, "job"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
  EXPECT_NE(r.output.find("TLS with 127.0.0.1"), std::string::npos) << r.output;
  r = box.run({"run", "--url", url, "job", "--", "true"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
}

TEST(EtcdTls, APlainClientOfATlsMemberIsNotGrantedAnything) {
  cli_sandbox box;
  auto r = box.run({"run", "--url", "etcd://127.0.0.1:" + std::to_string(tls_server().port()),
                    "job", "--", "echo", "CMD-RAN"},
                   20s);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
}

TEST(EtcdTls, AMemberRequiringClientCertificates) {
  lock_and_unlock(tls_url(client_auth_server(), "127.0.0.1", with_client_cert()),
                  client_auth_server());
  const auto without = tls_url(client_auth_server(), "127.0.0.1", "cacert=" + pki().ca());
  std::string what;
  EXPECT_EQ(open_error(without, &what), make_error_code(errc::permission_denied)) << what;
  cli_sandbox box;
  auto r = box.run({"run", "--url", without, "job", "--", "echo", "CMD-RAN"}, 20s);
  EXPECT_EQ(r.status, 77) << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
}

TEST(EtcdTls, CertAndKeyComeTogetherAndUnreadableFilesAreNamed) {
  std::string what;
  auto url =
      tls_url(tls_server(), "127.0.0.1", "cacert=" + pki().ca() + "&cert=" + pki().client_cert());
  EXPECT_EQ(open_error(url, &what), make_error_code(errc::invalid_argument)) << what;
  EXPECT_NE(what.find("without key"), std::string::npos) << what;
  url = tls_url(tls_server(), "127.0.0.1", "cacert=" + pki().ca() + "&key=" + pki().client_key());
  EXPECT_EQ(open_error(url, &what), make_error_code(errc::invalid_argument)) << what;
  EXPECT_NE(what.find("without cert"), std::string::npos) << what;
  const std::string missing = pki().file("no-such-ca.pem");
  url = tls_url(tls_server(), "127.0.0.1", "cacert=" + missing);
  EXPECT_EQ(open_error(url, &what), make_error_code(errc::invalid_argument)) << what;
  EXPECT_NE(what.find(missing), std::string::npos) << what;
  // TLS parameters on a plain URL are unknown ones, not silently ignored.
  url = "etcd://127.0.0.1:" + std::to_string(tls_server().port()) + "?cacert=" + pki().ca();
  EXPECT_EQ(open_error(url, &what), make_error_code(errc::invalid_argument)) << what;
}

// Several members given by host name: resolved at open into one address list that gRPC fails
// over in (a dead first member is skipped).
TEST(EtcdHostNames, SeveralMembersByName) {
  auto& plain = shared_etcd();
  const auto dead = free_port();
  const std::string url = "etcd://localhost:" + std::to_string(dead) +
                          ",localhost:" + std::to_string(plain.port()) + "/tls?ttl=3s";
  lock_and_unlock(url, plain);
  std::string what;
  EXPECT_EQ(open_error("etcd://no-such-host.invalid:2379,localhost:2379", &what),
            make_error_code(errc::backend_unavailable))
      << what;
  EXPECT_NE(what.find("no-such-host.invalid"), std::string::npos) << what;
}

// Listed after a member that resolves (to IPv4 only, or by name), the name that does not is the
// one named: the IPv6 pass used to report the first member for lacking an IPv6 address.
TEST(EtcdHostNames, TheMemberThatDoesNotResolveIsNamedWhereverItIsListed) {
  for (const std::string first : {"127.0.0.1", "localhost"}) {
    std::string what;
    EXPECT_EQ(open_error("etcd://" + first + ":2379,no-such-host.invalid:2379", &what),
              make_error_code(errc::backend_unavailable))
        << what;
    EXPECT_NE(what.find("member 'no-such-host.invalid' does not resolve"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("'" + first + "'"), std::string::npos) << what;
  }
}

// `dlock unlock --force` on etcd is refused (69, nothing changed) with etcd's own reason and
// what to do instead, not ZooKeeper's or the advisory modes' (a tester's report).
TEST(EtcdCli, UnlockForceIsRefusedWithEtcdsOwnReason) {
  auto& plain = shared_etcd();
  const auto url = "etcd://" + plain.address() + "/uf" + random_suffix();
  cli_sandbox box;
  auto holder = box.start({"run", "job", "--url", url, "--", "sh", "-c", "echo held; sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto r = box.run({"unlock", "job", "--url", url, "--force", "--yes"}, 20s);
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_NE(r.output.find("cannot end another client's session"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("etcd lease"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("etcdctl lease revoke"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ZooKeeper"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("advisory"), std::string::npos) << r.output;
  EXPECT_EQ(box.run({"status", "job", "--url", url}, 20s).status, 0) << "a refusal changed things";
  holder.signal(SIGTERM);
  EXPECT_TRUE(holder.wait(30s).has_value());
}

TEST(EtcdHostNames, TlsWithSeveralMembersByName) {
  const auto dead = free_port();
  const std::string url = "etcds://localhost:" + std::to_string(tls_server().port()) +
                          ",localhost:" + std::to_string(dead) + "/tls?ttl=3s&cacert=" + pki().ca();
  lock_and_unlock(url, tls_server());
}

}  // namespace
}  // namespace dlock::test
