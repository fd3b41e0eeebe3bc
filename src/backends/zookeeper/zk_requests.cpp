// The connection's requests that give up at a deadline or at the session's end (the
// client's own synchronous calls wait for a reply or a connection loss, however long).
#include "backends/zookeeper/zk_connection.hpp"
#include "backends/zookeeper/zk_pending_call.hpp"

namespace dlock::detail::zk {

int connection::delete_until(const std::string& path, steady::time_point deadline) {
  std::shared_ptr<pending_call> p;
  return call_until(*this, deadline, p, [&](zhandle_t* zh, const void* data) {
    sent(op::remove);
    return zoo_adelete(
        zh, path.c_str(), -1, [](int rc, const void* d) { pending_call::finish(d, rc, nullptr); },
        data);
  });
}

int connection::get_children_until(const std::string& path, steady::time_point deadline,
                                   std::vector<std::string>& out) {
  std::shared_ptr<pending_call> p;
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* data) {
    sent(op::get_children);
    return zoo_aget_children(
        zh, path.c_str(), 0,
        [](int rc, const String_vector* v, const void* d) { pending_call::finish(d, rc, v); },
        data);
  });
  if (rc == ZOK) {
    std::lock_guard lk(p->m);
    out = std::move(p->children);
  }
  return rc;
}

// The watching reads, with this connection's node watch: getData rather than exists where
// the node should be there (on a missing node exists would leave a watch behind).
int connection::watch_data_until(const std::string& path, steady::time_point deadline,
                                 struct Stat* st) {
  std::shared_ptr<pending_call> p;
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::get_data);
    return zoo_awget(
        zh, path.c_str(), &connection::node_watcher, this,
        [](int rc, const char*, int, const struct Stat* stat, const void* d) {
          pending_call::finish_stat(rc, stat, d);
        },
        d);
  });
  if (rc == ZOK && st) {
    std::lock_guard lk(p->m);
    *st = p->stat;
  }
  return rc;
}

int connection::watch_children_until(const std::string& path, steady::time_point deadline,
                                     std::vector<std::string>& out) {
  std::shared_ptr<pending_call> p;
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::get_children);
    return zoo_awget_children(
        zh, path.c_str(), &connection::node_watcher, this,
        [](int rc, const String_vector* v, const void* d) { pending_call::finish(d, rc, v); }, d);
  });
  if (rc == ZOK) {
    std::lock_guard lk(p->m);
    out = std::move(p->children);
  }
  return rc;
}

int connection::watch_exists_until(const std::string& path, steady::time_point deadline) {
  std::shared_ptr<pending_call> p;
  return call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::exists);
    return zoo_awexists(zh, path.c_str(), &connection::node_watcher, this,
                        &pending_call::finish_stat, d);
  });
}

int connection::create_until(const std::string& path, std::string_view data, const ACL_vector* acl,
                             int mode, steady::time_point deadline, std::string& created,
                             struct Stat& st) {
  std::shared_ptr<pending_call> p;
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::create);
    // No data (a null view) is a null node value, as zoo_create(nullptr, -1) made it.
    const int len = data.data() == nullptr ? -1 : static_cast<int>(data.size());
    return zoo_acreate2(
        zh, path.c_str(), data.data(), len, acl, mode,
        [](int rc, const char* value, const struct Stat* stat, const void* d) {
          auto* held = static_cast<const std::shared_ptr<pending_call>*>(d);
          if (rc == ZOK) {
            std::lock_guard lk((*held)->m);
            if (value) (*held)->value = value;
            if (stat) (*held)->stat = *stat;
          }
          pending_call::finish(d, rc, nullptr);
        },
        d);
  });
  if (rc == ZOK) {
    std::lock_guard lk(p->m);
    created = p->value;
    st = p->stat;
  }
  return rc;
}

int connection::set_until(const std::string& path, std::string_view data, int version,
                          steady::time_point deadline, struct Stat& st) {
  std::shared_ptr<pending_call> p;
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::set_data);
    return zoo_aset(zh, path.c_str(), data.data(), static_cast<int>(data.size()), version,
                    &pending_call::finish_stat, d);
  });
  if (rc == ZOK) {
    std::lock_guard lk(p->m);
    st = p->stat;
  }
  return rc;
}

int connection::exists_until(const std::string& path, steady::time_point deadline) {
  std::shared_ptr<pending_call> p;
  return call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    sent(op::exists);
    return zoo_aexists(zh, path.c_str(), 0, &pending_call::finish_stat, d);
  });
}

int connection::check_until(const std::vector<std::string>& paths, steady::time_point deadline,
                            std::size_t& first_missing) {
  std::shared_ptr<pending_call> p;
  // The client writes the results when the reply comes, which may be after this call gave up:
  // they live in the shared pending call, never on this stack.
  std::vector<zoo_op_t> ops(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) zoo_check_op_init(&ops[i], paths[i].c_str(), -1);
  int rc = call_until(*this, deadline, p, [&](zhandle_t* zh, const void* d) {
    auto& results = (*static_cast<const std::shared_ptr<pending_call>*>(d))->results;
    results.assign(paths.size(), zoo_op_result_t{});
    sent(op::exists);
    return zoo_amulti(
        zh, static_cast<int>(ops.size()), ops.data(), results.data(),
        [](int rc, const void* d) { pending_call::finish(d, rc, nullptr); }, d);
  });
  first_missing = paths.size();
  if (rc == ZNONODE) {
    std::lock_guard lk(p->m);
    for (std::size_t i = 0; i < p->results.size() && first_missing == paths.size(); ++i) {
      if (p->results[i].err == ZNONODE) first_missing = i;
    }
  }
  return rc;
}

}  // namespace dlock::detail::zk
