#pragma once
// A database (MariaDB) or schema (PostgreSQL) holds the locks of one mode only: dlock refuses
// a session of the other mode there, since lease mode's rows and advisory mode's server locks
// never exclude each other. Tests that use both modes on one server get mode=advisory URLs
// that name a place of their own: the database dlock_adv (MariaDB), the schema dlock_adv
// (PostgreSQL, unless the query names one).

#include <string>

namespace dlock::test {

inline constexpr const char* advisory_place = "dlock_adv";

inline bool wants_advisory(const std::string& query) {
  return query.find("mode=advisory") != std::string::npos;
}

// The database a MariaDB URL with `query` names.
inline std::string mariadb_database(const std::string& query) {
  return wants_advisory(query) ? advisory_place : "dlock";
}

// `query` with PostgreSQL's schema for mode=advisory added where it names none.
inline std::string postgres_query(const std::string& query) {
  if (!wants_advisory(query) || query.find("schema=") != std::string::npos) return query;
  return query + "&schema=" + advisory_place;
}

}  // namespace dlock::test
