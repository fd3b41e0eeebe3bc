// The fault run's etcd backend: one member (data on /dev/shm), restartable with its data.
// Orphans are counted raw with etcdctl: once every worker has exited, any key left under the
// lock's name (a contender key or its companion) outlived its session.
#include <memory>
#include <string>
#include <vector>

#include "fault/fault_backends.hpp"
#include "support/etcd_server.hpp"
#include "support/net.hpp"

namespace dlock::fault {
namespace {

class etcd_fault final : public fault_backend {
 public:
  std::string url(const std::vector<std::uint16_t>& ports) override {
    return "etcd://127.0.0.1:" + std::to_string(ports.at(0)) + "/" + prefix_ +
           "?ttl=" + std::to_string(ttl().count()) + "ms";
  }
  std::vector<std::uint16_t> server_ports() const override { return {server_.port()}; }

  // "P/NAME" covers both "P/NAME/<lease>" and its companion "P/NAME\0dlock/<lease>".
  std::size_t orphans(const std::string& lock) override {
    return server_.keys(prefix_ + "/" + lock).size();
  }

  void stop_server(bool) override { server_.stop(); }
  void start_server() override { server_.start(); }

 private:
  test::etcd_server server_;
  std::string prefix_ = "f" + test::random_suffix();
};

}  // namespace

std::unique_ptr<fault_backend> make_etcd_fault(const std::string&) {
  return std::make_unique<etcd_fault>();
}

}  // namespace dlock::fault
