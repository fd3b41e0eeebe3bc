#pragma once
// Server-side counters, read where a backend reports them over its own plain protocol:
// redis INFO (commandstats, memory), ZooKeeper `mntr`, etcd's /metrics (gRPC calls started),
// the SQLite file size. Best effort: a counter the backend does not report, or a probe that
// fails, is simply absent.

#include <optional>
#include <string>

namespace dlock::cli {

struct server_counters {
  std::optional<double> requests;      // requests the server has handled so far
  std::optional<double> memory_bytes;  // memory (or file bytes) the server uses for data
};

class backend_probe {
 public:
  explicit backend_probe(std::string url);
  server_counters read() const;
  // What `requests` counts, for notes ("redis commands"), empty when nothing is counted.
  std::string requests_name() const;
  std::string memory_name() const;

 private:
  std::string scheme_;
  std::string host_;
  int port_{0};
  std::string user_;
  std::string password_;
  std::string path_;
};

}  // namespace dlock::cli
