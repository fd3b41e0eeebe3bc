// One mode per database: the record of the first session's mode (my_schema.hpp, claim_mode).
#include <mysqld_error.h>

#include <string>
#include <string_view>

#include "backends/mysql/my_schema.hpp"

namespace dlock::detail::my {

namespace {

result<void> refused(conn& c, const std::string& held, std::string_view mode) {
  const std::string m(mode);
  return fail(
      errc::invalid_argument,
      c.where() + ": this database holds mode=" + held + " locks, and mode=" + m +
          " locks here would not exclude them (each mode sees only its own): use mode=" + held +
          " on every client of this database, or another database for mode=" + m +
          " (once no mode=" + held + " client is left: DELETE FROM dlock_meta WHERE k = 'mode')");
}

}  // namespace

result<void> claim_mode(conn& c, std::string_view mode, bool record) {
  // Every open reads the record first: once a database has one, that is the only round trip.
  // An observer (status, doctor) only reads it: looking must not decide the mode.
  auto seen = c.exec("SELECT v FROM dlock_meta WHERE k = 'mode'");
  const bool no_table =
      !seen &&
      seen.error().message.find("(error " + std::to_string(ER_NO_SUCH_TABLE)) != std::string::npos;
  if (!seen && !no_table) {
    return fail(failure{seen.error().code, seen.error().message + " (reading the mode)"});
  }
  if (seen && !seen->rows.empty()) {
    if (seen->text(0, 0) == mode) return {};
    return refused(c, seen->text(0, 0), mode);
  }
  if (!record) return {};  // nothing recorded yet
  // Advisory mode makes no other table; lease mode's schema has it already.
  if (no_table) {
    auto made = c.exec(statements::create_meta);
    if (!made) {
      return fail(failure{made.error().code, made.error().message + " (creating dlock_meta)"});
    }
  }
  // The first session to open records its mode; one that raced it keeps that record.
  auto put = c.run("INSERT INTO dlock_meta(k, v) VALUES ('mode', ?) ON DUPLICATE KEY UPDATE k = k",
                   {std::string(mode)});
  if (!put) return fail(failure{put.error().code, put.error().message + " (recording the mode)"});
  auto r = c.exec("SELECT v FROM dlock_meta WHERE k = 'mode'");
  if (!r) return fail(failure{r.error().code, r.error().message + " (reading the mode)"});
  if (r->rows.empty()) return fail(errc::protocol_error, c.where() + ": no mode recorded");
  if (r->text(0, 0) == mode) return {};
  return refused(c, r->text(0, 0), mode);
}

}  // namespace dlock::detail::my
