// dlock::inspect and dlock::list_locks: read-only views for status tools.
#include <dlock/inspect.hpp>

#include "core/names.hpp"
#include "core/session_core.hpp"
#include "core/verdict.hpp"

namespace dlock {

std::vector<queue_entry> inspect(const session& s, std::string_view name) {
  if (!s)
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: inspect on an empty session");
  if (auto v = detail::validate_lock_name(name); !v) detail::raise(v.error(), "dlock");
  auto q = s.core()->backend().list(name);
  if (!q) detail::raise(q.error(), "dlock: inspect '" + std::string(name) + "'");
  std::vector<queue_entry> out;
  for (std::size_t i = 0; i < q->entries.size(); ++i) {
    const auto& e = q->entries[i];
    out.push_back(queue_entry{detail::entry_holds(q->entries, i),
                              e.kind == detail::entry_kind::shared, e.token, e.owner, e.since,
                              e.lease_left});
  }
  return out;
}

std::vector<std::string> list_locks(const session& s, std::string_view prefix) {
  if (!s)
    throw system_error(make_error_code(errc::invalid_argument), "dlock: list on an empty session");
  if (!s.capabilities().lists_names) {
    throw system_error(make_error_code(errc::unsupported),
                       "dlock: list locks: " + s.url() +
                           " cannot list lock names (its capabilities); ask about one name: "
                           "inspect(), dlock status NAME");
  }
  auto r = s.core()->backend().lock_names(prefix);
  if (!r) detail::raise(r.error(), "dlock: list locks");
  return std::move(*r);
}

}  // namespace dlock
