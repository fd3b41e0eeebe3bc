// One primary among every process sharing the URL: a leader election. Everyone can see who
// leads and its value (here the primary's address); the leader's term is a fencing token, and
// leadership is lost, its signal firing, before another candidate can be elected.
#include <dlock/dlock.hpp>
#include <iostream>

int main(int argc, char** argv) try {
  using namespace std::chrono_literals;
  auto session = dlock::session::open(argc > 1 ? argv[1] : "sqlite:///tmp/dlock-example.db");
  dlock::election primary(session, "billing/primary");
  auto lead = primary.try_campaign_for("10.0.0.7:8080", 30s);
  if (!lead) {  // another candidate leads: follow it
    if (auto l = primary.leader()) std::cout << "following " << l->value << "\n";
    return 75;
  }
  std::cout << "leading as " << lead.value() << " in term " << lead.token().value << "\n";
  // ... serve as primary, passing lead.token() with every write; stop if lead.lost_token()
  // fires ...
  return 0;                               // resigned when it goes out of scope: the next leads
} catch (const dlock::system_error& e) {  // a mistyped URL, a backend without elections...
  std::cerr << "dlock_election_example: " << e.what() << "\n";
  const bool usage = e.code() == dlock::condition::misuse || e.code() == dlock::errc::unsupported;
  return usage ? 64 : 69;  // sysexits: usage / unavailable
}
