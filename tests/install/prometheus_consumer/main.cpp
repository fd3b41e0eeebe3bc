// Takes one lock on the URL given and prints the registry's text exposition, as a program
// serving /metrics would.
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <dlock/dlock.hpp>
#include <dlock/prometheus.hpp>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: prometheus_consumer URL\n";
    return 64;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry, {.lock_labels = {"nightly"}});
  auto session = dlock::session::open(argv[1], {.observer = metrics.observer_for(argv[1])});
  dlock::mutex m(session, "nightly");
  m.lock();
  m.unlock();
  std::cout << prometheus::TextSerializer().Serialize(registry->Collect());
}
