// Compares dlock's etcd_rpc.proto with etcd's own .proto files (as Debian ships them in
// golang-etcd-server-dev), from two descriptor sets made by protoc: every field of ours must
// have etcd's number, name, type, label, message/enum type and oneof; every enum value its
// number; every method its types and streaming flags. What travels on the wire is exactly that.
//   etcd_proto_check OURS.pb ETCD.pb   (exit 0: no mismatch; 1: mismatches, listed)
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace {

namespace gp = google::protobuf;

std::unique_ptr<gp::DescriptorPool> load(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  gp::FileDescriptorSet set;
  if (!in || !set.ParseFromString(buf.str())) {
    std::cerr << path << ": not a FileDescriptorSet\n";
    return nullptr;
  }
  auto pool = std::make_unique<gp::DescriptorPool>();
  for (const auto& f : set.file()) {
    if (!pool->BuildFile(f)) {
      std::cerr << path << ": cannot build " << f.name() << "\n";
      return nullptr;
    }
  }
  return pool;
}

// Our declarations of etcd's mvccpb messages live in our one package.
std::string theirs_name(std::string n) {
  for (const char* m : {"etcdserverpb.KeyValue", "etcdserverpb.Event"}) {
    std::string s(m);
    if (n == s || n.starts_with(s + "."))
      return "mvccpb." + n.substr(std::string("etcdserverpb.").size());
  }
  return n;
}

int mismatches = 0, fields = 0, values = 0, methods = 0, messages = 0;

void bad(const std::string& what) {
  ++mismatches;
  std::cout << "MISMATCH " << what << "\n";
}

void check_enum(const gp::EnumDescriptor* ours, const gp::DescriptorPool& pool) {
  auto* t = pool.FindEnumTypeByName(theirs_name(ours->full_name()));
  if (!t) return bad("enum " + ours->full_name() + " not in etcd's protos");
  for (int i = 0; i < ours->value_count(); ++i) {
    auto* v = ours->value(i);
    auto* tv = t->FindValueByNumber(v->number());
    ++values;
    if (!tv || tv->name() != v->name()) bad("enum value " + v->full_name());
  }
}

void check_message(const gp::Descriptor* ours, const gp::DescriptorPool& pool) {
  ++messages;
  auto* t = pool.FindMessageTypeByName(theirs_name(ours->full_name()));
  if (!t) return bad("message " + ours->full_name() + " not in etcd's protos");
  for (int i = 0; i < ours->field_count(); ++i) {
    auto* f = ours->field(i);
    ++fields;
    auto* tf = t->FindFieldByNumber(f->number());
    const std::string at = ours->full_name() + "." + f->name();
    if (!tf) {
      bad(at + ": no field " + std::to_string(f->number()));
      continue;
    }
    if (tf->name() != f->name()) bad(at + ": etcd names it " + tf->name());
    if (tf->type() != f->type())
      bad(at + ": type " + f->type_name() + ", etcd's " + tf->type_name());
    if (tf->label() != f->label()) bad(at + ": label differs");
    if (f->message_type() && (!tf->message_type() || theirs_name(f->message_type()->full_name()) !=
                                                         tf->message_type()->full_name())) {
      bad(at + ": message type differs");
    }
    if (f->enum_type() && (!tf->enum_type() || theirs_name(f->enum_type()->full_name()) !=
                                                   tf->enum_type()->full_name())) {
      bad(at + ": enum type differs");
    }
    auto* o = f->containing_oneof();
    auto* to = tf->containing_oneof();
    if ((o == nullptr) != (to == nullptr) || (o && o->name() != to->name())) {
      bad(at + ": oneof differs");
    }
  }
  for (int i = 0; i < ours->enum_type_count(); ++i) check_enum(ours->enum_type(i), pool);
  for (int i = 0; i < ours->nested_type_count(); ++i) check_message(ours->nested_type(i), pool);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: etcd_proto_check OURS.pb ETCD.pb\n";
    return 2;
  }
  auto ours = load(argv[1]), theirs = load(argv[2]);
  if (!ours || !theirs) return 2;
  auto* file = ours->FindFileByName("etcd_rpc.proto");
  if (!file) {
    std::cerr << argv[1] << ": no etcd_rpc.proto\n";
    return 2;
  }
  for (int i = 0; i < file->message_type_count(); ++i)
    check_message(file->message_type(i), *theirs);
  for (int i = 0; i < file->enum_type_count(); ++i) check_enum(file->enum_type(i), *theirs);
  for (int i = 0; i < file->service_count(); ++i) {
    auto* s = file->service(i);
    auto* ts = theirs->FindServiceByName(s->full_name());
    if (!ts) {
      bad("service " + s->full_name());
      continue;
    }
    for (int j = 0; j < s->method_count(); ++j) {
      auto* m = s->method(j);
      ++methods;
      auto* tm = ts->FindMethodByName(m->name());
      if (!tm) {
        bad("method " + m->full_name());
        continue;
      }
      if (theirs_name(m->input_type()->full_name()) != tm->input_type()->full_name() ||
          theirs_name(m->output_type()->full_name()) != tm->output_type()->full_name() ||
          m->client_streaming() != tm->client_streaming() ||
          m->server_streaming() != tm->server_streaming()) {
        bad("method " + m->full_name() + ": types or streaming differ");
      }
    }
  }
  // What the client calls must be among what was checked: a declaration dropped from ours
  // would otherwise pass unnoticed.
  for (const char* name : {"etcdserverpb.AuthenticateRequest", "etcdserverpb.AuthenticateResponse",
                           "etcdserverpb.TxnRequest", "etcdserverpb.WatchRequest",
                           "etcdserverpb.LeaseKeepAliveRequest"}) {
    if (!ours->FindMessageTypeByName(name)) bad(std::string("ours lacks ") + name);
  }
  if (!ours->FindMethodByName("etcdserverpb.Auth.Authenticate"))
    bad("ours lacks etcdserverpb.Auth.Authenticate");
  std::cout << fields << " fields in " << messages << " messages, " << values << " enum values, "
            << methods << " methods checked against etcd's protos: " << mismatches
            << " mismatches\n";
  return mismatches == 0 ? 0 : 1;
}
