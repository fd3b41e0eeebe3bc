#pragma once
// Certificates for the TLS tests, made with `openssl` in the test's own temporary directory:
// a CA, a server certificate it signs for 127.0.0.1 and localhost, a client certificate it
// signs, and a second CA that signs neither (the wrong CA). EC P-256 keys: quick to make.

#include <string>

#include "support/net.hpp"

namespace dlock::test {

class etcd_pki {
 public:
  etcd_pki();
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string ca() const { return file("ca.pem"); }
  std::string other_ca() const { return file("other-ca.pem"); }
  std::string server_cert() const { return file("server.pem"); }
  std::string server_key() const { return file("server.key"); }
  std::string client_cert() const { return file("client.pem"); }
  std::string client_key() const { return file("client.key"); }

 private:
  temp_dir dir_{"dlock-etcd-pki"};
};

}  // namespace dlock::test
