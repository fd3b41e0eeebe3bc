// PostgreSQL's schema change for entry values (elections) is additive: a schema created by a
// dlock from before it, with a live hold, is extended in place when today's dlock opens it,
// keeps the hold and its tokens, and what the older clients run goes on working beside it.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <dlock/dlock.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/net.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

postgres_server& server() {
  static postgres_server s;
  return s;
}

// A connection as user "dlock"; exec() runs one or more statements (simple protocol) and
// returns each row's columns joined by '|'.
class raw_pg {
 public:
  explicit raw_pg(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c_));
  }
  ~raw_pg() { PQfinish(c_); }
  std::vector<std::string> exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    auto st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
      std::string msg = PQresultErrorMessage(r);
      PQclear(r);
      throw std::runtime_error(sql.substr(0, 80) + ": " + msg);
    }
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(r); ++i) {
      std::string row;
      for (int c = 0; c < PQnfields(r); ++c)
        row += (c ? "|" : "") + std::string(PQgetvalue(r, i, c));
      out.push_back(row);
    }
    PQclear(r);
    return out;
  }

 private:
  PGconn* c_;
};

std::string old_ddl(const std::string& schema) {
  std::ifstream in(DLOCK_SOURCE_DIR "/tests/sql/data/pg_schema_3_before_values.sql");
  if (!in) throw std::runtime_error("pg_schema_3_before_values.sql not found");
  std::stringstream text;
  text << in.rdbuf();
  auto sql = text.str();
  for (auto at = sql.find("@S"); at != std::string::npos; at = sql.find("@S", at)) {
    sql.replace(at, 2, "\"" + schema + "\"");
  }
  return sql;
}

TEST(postgres_schema, a_schema_from_before_values_is_extended_and_older_clients_go_on) {
  const std::string schema = "before_values";
  const std::string s = "\"" + schema + "\"";
  raw_pg old(server().url());
  old.exec(old_ddl(schema));
  // A live hold as the older dlock leaves it (no server process recorded: only the lease).
  old.exec("INSERT INTO " + s +
           ".sessions(id, owner, expires) VALUES ('old', 'old holder', clock_timestamp() + "
           "interval '60 seconds');"
           "SELECT * FROM " +
           s + ".enqueue('old', 'held', 'old-1', 0::smallint)");
  auto url = server().url("schema=" + schema);
  auto now = session::open(url);
  dlock::mutex held(now, "held");
  EXPECT_FALSE(held.try_lock()) << "the older client's hold was lost when the schema was extended";
  auto q = inspect(now, "held");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].owner, "old holder");
  EXPECT_EQ(old.exec("SELECT value FROM " + s + ".meta WHERE key = 'schema_version'"),
            std::vector<std::string>{"3"})
      << "older clients refuse a newer version: the change must stay additive";

  // What the older client runs: the same six columns as before.
  auto rows = old.exec("SELECT * FROM " + s + ".enqueue('old', 'other', 'old-2', 0::smallint)");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::count(rows[0].begin(), rows[0].end(), '|'), 5) << rows[0];
  rows = old.exec("SELECT * FROM " + s + ".queue('held', 'old')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::count(rows[0].begin(), rows[0].end(), '|'), 5) << rows[0];

  dlock::election e(now, "primary");
  auto lead = e.try_campaign_for("here", 5s);
  ASSERT_TRUE(lead);
  auto l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "here");
  EXPECT_EQ(l->version, 1u);
  // Opening again finds everything in place (no DDL: one query).
  auto again = session::open(url);
  EXPECT_EQ(dlock::election(again, "primary").leader()->value, "here");
}

// Tokens come in blocks of 32 (fence_hot), under a bound in fences. Anything else that raises
// the bound (an older dlock's functions, reinstalled, take the next token from fences
// directly) must end the block: the next token must be above the raised bound, not the next
// one of the block.
TEST(postgres_schema, a_token_block_ends_when_anything_else_raises_the_bound) {
  auto s = session::open(server().url("schema=blocks"));
  dlock::mutex m(s, "b");
  m.lock();
  const auto first = m.token().value;
  m.unlock();
  raw_pg pg(server().url());
  auto raised =
      pg.exec("UPDATE blocks.fences SET fence = fence + 1 WHERE name = 'b' RETURNING fence");
  ASSERT_EQ(raised.size(), 1u);
  m.lock();
  EXPECT_GT(m.token().value, std::stoull(raised[0])) << "the first token was " << first;
  m.unlock();
}

// Concurrent acquires of one lock lock two rows, fence_hot's and, to start a block, fences'.
// Taken in two orders they deadlocked (the server aborts one after deadlock_timeout, and the
// acquire retries a second later); counted by the server, not timed.
TEST(postgres_schema, concurrent_acquires_across_token_blocks_never_deadlock) {
  raw_pg pg(server().url());
  auto deadlocks = [&] {
    return std::stoll(pg.exec("SELECT deadlocks FROM pg_stat_database WHERE datname = "
                              "current_database()")
                          .at(0));
  };
  // The schema first, so that only the acquires are counted.
  session::open(server().url("schema=blocks_contended")).close();
  const auto before = deadlocks();
  {
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c) {
      clients.emplace_back([] {
        auto s = session::open(server().url("schema=blocks_contended"));
        dlock::mutex m(s, "contended");
        std::uint64_t last = 0;
        for (int i = 0; i < 120; ++i) {
          m.lock();
          EXPECT_GT(m.token().value, last);
          last = m.token().value;
          m.unlock();
        }
      });
    }
    for (auto& t : clients) t.join();
  }
  // The sessions' server processes report their counts as they exit.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(deadlocks(), before);
}

// Sessions that start together on a new schema all find it missing and queue for the DDL's
// advisory lock; each used to run the DDL again once its turn came, on a schema the first
// sessions were already acquiring in, and its ALTER TABLEs and function replacements waited
// for (or deadlocked with) their acquires. Only the first may run it. Counted by an event
// trigger (one row per DDL command, with its transaction), not timed: the sessions are held
// at the lock until all have found the schema missing.
TEST(postgres_schema, sessions_that_start_together_on_a_new_schema_run_its_ddl_once) {
  server().query("CREATE TABLE public.ddl_seen(schema_name text, tx xid8)");
  server().query(
      "CREATE FUNCTION public.ddl_count() RETURNS event_trigger LANGUAGE plpgsql "
      "SECURITY DEFINER AS $$ BEGIN INSERT INTO public.ddl_seen SELECT schema_name, "
      "pg_current_xact_id() FROM pg_event_trigger_ddl_commands(); END $$");
  server().query(
      "CREATE EVENT TRIGGER ddl_count ON ddl_command_end EXECUTE FUNCTION public.ddl_count()");
  struct drop_trigger {
    ~drop_trigger() {
      for (const char* sql : {"DROP EVENT TRIGGER ddl_count", "DROP FUNCTION public.ddl_count()",
                              "DROP TABLE public.ddl_seen"}) {
        server().query(sql);
      }
    }
  } dropped;
  raw_pg gate(server().url());
  gate.exec("BEGIN");
  gate.exec("SELECT pg_advisory_xact_lock(7234315448311949163)");
  const auto url = server().url("schema=ddl_once");
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&url] {
      auto s = session::open(url);
      dlock::mutex m(s, "together");
      for (int i = 0; i < 20; ++i) {
        m.lock();
        m.unlock();
      }
    });
  }
  // Every session has looked and is waiting for the lock.
  for (int waited = 0; waited < 100; ++waited) {
    auto waiting =
        gate.exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
    if (waiting.at(0) == "6") break;
    std::this_thread::sleep_for(50ms);
  }
  gate.exec("COMMIT");
  for (auto& t : clients) t.join();
  EXPECT_EQ(server().query("SELECT count(DISTINCT tx) FROM public.ddl_seen WHERE schema_name = "
                           "'ddl_once'"),
            std::vector<std::string>{"1"});
}

// The server keeps its process list for the rest of a transaction once read: a listing must
// not take a session whose connection began after that for a dead one (it deleted all eight
// workers' sessions in one CI run). Here one transaction lists twice, around a new session's
// arrival; the second listing must keep it.
TEST(postgres_schema, a_session_younger_than_the_listers_process_list_is_not_taken_for_dead) {
  auto url = server().url();
  auto a = session::open(url);
  const auto lock = "young-" + random_suffix();
  dlock::mutex held(a, lock);
  held.lock();
  raw_pg lister(url);
  lister.exec("BEGIN");
  ASSERT_EQ(lister.exec("SELECT count(*) FROM dlock.queue_values('" + lock + "', '')"),
            std::vector<std::string>{"1"});
  auto b = session::open(url);  // a new connection: a server process the list above lacks
  dlock::mutex waiting(b, lock);
  bool granted = false;
  std::thread t([&] { granted = waiting.try_lock_for(30s); });
  auto look = session::open(url, {.observe_only = true});
  for (int i = 0; i < 500 && inspect(look, lock).size() < 2; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(inspect(look, lock).size(), 2u);
  EXPECT_EQ(lister.exec("SELECT count(*) FROM dlock.queue_values('" + lock + "', '')"),
            std::vector<std::string>{"2"})
      << "the listing deleted a live session it had not seen in its process list";
  lister.exec("COMMIT");
  held.unlock();
  t.join();
  EXPECT_TRUE(granted) << "the waiter's session was ended";
  if (granted) waiting.unlock();
}

}  // namespace
}  // namespace dlock::test
