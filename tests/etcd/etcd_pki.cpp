#include "etcd/etcd_pki.hpp"

#include <fstream>
#include <stdexcept>
#include <vector>

#include "support/process.hpp"

namespace dlock::test {
namespace {

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto [rc, out] = run_command(argv, std::chrono::seconds{20});
  if (rc != 0) throw std::runtime_error("openssl " + args.at(0) + " failed: " + out);
}

const std::vector<std::string> ec_key{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                      "-nodes"};

}  // namespace

etcd_pki::etcd_pki() {
  auto self_signed = [&](const std::string& name, const std::string& cn) {
    std::vector<std::string> a{"req", "-x509"};
    a.insert(a.end(), ec_key.begin(), ec_key.end());
    a.insert(a.end(), {"-keyout", file(name + ".key"), "-out", file(name + ".pem"), "-days", "2",
                       "-subj", "/CN=" + cn});
    openssl(a);
  };
  self_signed("ca", "dlock test CA");
  self_signed("other-ca", "dlock test other CA");
  std::ofstream(file("server.ext")) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  std::ofstream(file("client.ext")) << "extendedKeyUsage=clientAuth\n";
  for (const std::string name : {"server", "client"}) {
    std::vector<std::string> a{"req"};
    a.insert(a.end(), ec_key.begin(), ec_key.end());
    a.insert(a.end(),
             {"-keyout", file(name + ".key"), "-out", file(name + ".csr"), "-subj", "/CN=" + name});
    openssl(a);
    openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", ca(), "-CAkey", file("ca.key"),
             "-CAcreateserial", "-out", file(name + ".pem"), "-days", "2", "-extfile",
             file(name + ".ext")});
  }
}

}  // namespace dlock::test
