// URL, duration and lock-name parsing: the inputs users type.
#include <gtest/gtest.h>

#include <dlock/session.hpp>

#include "core/duration.hpp"
#include "core/names.hpp"
#include "core/url.hpp"

namespace dlock::detail {
namespace {

using namespace std::chrono_literals;

TEST(url, parses_every_part) {
  auto u = parse_url("redis://alice:s%40cret@h1:6379,[::1]:7000/2?prefix=x:&ttl=5s");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->scheme, "redis");
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "s@cret");
  ASSERT_EQ(u->hosts.size(), 2u);
  EXPECT_EQ(u->hosts[0].host, "h1");
  EXPECT_EQ(u->hosts[0].port, 6379);
  EXPECT_EQ(u->hosts[1].host, "::1");
  EXPECT_EQ(u->hosts[1].port, 7000);
  EXPECT_EQ(u->path, "/2");
  EXPECT_EQ(u->param("prefix"), "x:");
  EXPECT_EQ(u->param("ttl"), "5s");
  EXPECT_EQ(u->redacted.find("s%40cret"), std::string::npos) << u->redacted;
  EXPECT_NE(u->redacted.find("alice:***@"), std::string::npos) << u->redacted;
}

TEST(url, host_lists_and_bracketed_ipv6_keep_their_ports) {
  auto u = parse_url("redlock://a:1,[::1]:2,b,[fe80::1]/0");
  ASSERT_TRUE(u) << u.error().message;
  ASSERT_EQ(u->hosts.size(), 4u);
  EXPECT_EQ(u->hosts[0].host, "a");
  EXPECT_EQ(u->hosts[0].port, 1);
  EXPECT_EQ(u->hosts[1].host, "::1");
  EXPECT_EQ(u->hosts[1].port, 2);
  EXPECT_EQ(u->hosts[2].host, "b");
  EXPECT_EQ(u->hosts[2].port, 0);
  EXPECT_EQ(u->hosts[3].host, "fe80::1");
  EXPECT_EQ(u->hosts[3].port, 0);
  auto zk = parse_url("zk://h1:2181,h2:2181/path");
  ASSERT_TRUE(zk) << zk.error().message;
  ASSERT_EQ(zk->hosts.size(), 2u);
  EXPECT_EQ(zk->hosts[1].host, "h2");
  EXPECT_EQ(zk->hosts[1].port, 2181);
  EXPECT_EQ(zk->path, "/path");
}

// Messages write an IPv6 address as a URL does: "redis ::1:6379" read as a host "::1:6379".
TEST(url, host_port_text_brackets_ipv6) {
  EXPECT_EQ(host_port_text("::1", 56379), "[::1]:56379");
  EXPECT_EQ(host_port_text("fe80::1%eth0", 1), "[fe80::1%eth0]:1");
  EXPECT_EQ(host_port_text("127.0.0.1", 6379), "127.0.0.1:6379");
  EXPECT_EQ(host_port_text("redis.example", 6379), "redis.example:6379");
}

TEST(url, sqlite_paths_have_no_host) {
  auto u = parse_url("sqlite:///var/lib/x%20y/locks.db?ttl=1s");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->hosts.empty());
  EXPECT_EQ(u->path, "/var/lib/x y/locks.db");
}

TEST(url, malformed_urls_name_what_is_wrong) {
  for (auto [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"localhost:6379", "missing '://'"},
           {"RE DIS://h", "bad scheme"},
           {"redis://h?ttl=5s&ttl=30s", "given twice ('5s' and '30s')"},
           {"redis://h?ttl=", "'ttl' has no value"},
           {"redis://h:99999", "bad port"},
           {"redis://h:abc", "bad port"},
           // One port per host: h:1:2 is no host "h:1" for a resolver to miss.
           {"redis://u:secret@h:1:2",
            "bad port '1:2' (want 1-65535; an IPv6 address goes in "
            "brackets: [::1]:6379)"},
           {"redlock://a:1,b:2:3,c:4", "bad port '2:3'"},
           {"redis://::1:6379", "bad port ':1:6379'"},
           {"redis://:1", "empty host"},
           {"zk://h:1/x?novalue", "not key=value"},
           {"redis://h/%zz", "bad path encoding"},
           {"redis://h\n", "URL 'redis://h\\x0a': control character at byte 10"},
           // Named, and never echoed raw (a tester's tab in ?prefix= showed as a gap).
           {"redis://h?prefix=a\tb", "control character at byte 19 (in parameter prefix)"},
           // A fragment: in a file's path it named another store without a word (a tester's).
           {"sqlite:///d/u.db#frag", "'#' begins a URL fragment"},
           {"redis://h:6379#x", "'#' begins a URL fragment"}}) {
    auto u = parse_url(text);
    ASSERT_FALSE(u) << text;
    EXPECT_EQ(u.error().code, make_error_code(errc::invalid_argument));
    EXPECT_NE(u.error().message.find(says), std::string::npos)
        << text << " -> " << u.error().message;
  }
}

// Every message about a URL quotes it, and a URL that does not parse still holds its
// password: no message may show it, whatever is wrong with the rest (a user's report: three
// of these printed "s3cret").
TEST(url, no_error_message_shows_the_password) {
  const std::string secret = "s3cret";
  for (std::string scheme : {"redis", "redlock", "redis-sentinel", "postgres", "postgresql",
                             "mysql", "mariadb", "etcd", "zk", "sqlite"}) {
    for (std::string tail : {"?ttl=", "?ttl=1s&ttl=2s", "?foo", "?ttl=1s&=x", ":99999", ":abc",
                             "/%zz", "/x?%zz=1", "?a=%zz"}) {
      for (std::string pw : {secret, secret + "%40x", "p@" + secret, secret + ":more"}) {
        auto text = scheme + "://default:" + pw + "@127.0.0.1" + tail;
        auto u = parse_url(text);
        ASSERT_FALSE(u) << text;
        EXPECT_EQ(u.error().message.find(secret), std::string::npos)
            << text << " -> " << u.error().message;
        EXPECT_NE(u.error().message.find("default:***@"), std::string::npos)
            << text << " -> " << u.error().message;
      }
    }
  }
  // With no "scheme://" the parser can read, what looks like user:password@ is hidden too.
  for (std::string text : {"redis//u:" + secret + "@h", "u:" + secret + "@h",
                           "u:" + secret + "@redis://h", "redis:/u:" + secret + "@h:1"}) {
    auto u = parse_url(text);
    ASSERT_FALSE(u) << text;
    EXPECT_EQ(u.error().message.find(secret), std::string::npos)
        << text << " -> " << u.error().message;
    EXPECT_NE(u.error().message.find(":***@"), std::string::npos)
        << text << " -> " << u.error().message;
  }
  // A password the URL's syntax would cut ('/', '?', '#' unencoded) is refused as such.
  for (std::string text : {"redis://default:p@ss:w/rd" + secret + "@127.0.0.1:6379",
                           "redis://default:a?" + secret + "@127.0.0.1",
                           "redis://default:a#" + secret + "@127.0.0.1"}) {
    auto u = parse_url(text);
    ASSERT_FALSE(u) << text;
    EXPECT_EQ(u.error().message.find(secret), std::string::npos) << u.error().message;
    EXPECT_NE(u.error().message.find("percent-encode"), std::string::npos) << u.error().message;
  }
}

// The hosts begin after the last '@': an unencoded '@' in the user info is refused, never
// split by a guess, whichever the scheme (one shared parser).
TEST(url, an_unencoded_at_in_user_info_is_refused) {
  for (std::string scheme :
       {"redis", "redlock", "redis-sentinel", "postgres", "mysql", "etcd", "zk", "sqlite"}) {
    for (auto [text, says] : std::vector<std::pair<std::string, std::string>>{
             {scheme + "://:s3c@ret@127.0.0.1:6379",
              "URL '" + scheme +
                  "://:***@127.0.0.1:6379': the password holds '@': percent-encode it as %40"},
             {scheme + "://u:s3c@ret@h/x", "the password holds '@'"},
             {scheme + "://a@b@h:1", "the user name holds '@': percent-encode it as %40"}}) {
      auto u = parse_url(text);
      ASSERT_FALSE(u) << text;
      EXPECT_NE(u.error().message.find(says), std::string::npos)
          << text << " -> " << u.error().message;
      EXPECT_EQ(u.error().message.find("ret@"), std::string::npos) << u.error().message;
    }
  }
  auto encoded = parse_url("redis://:s3c%40ret@127.0.0.1:6379");
  ASSERT_TRUE(encoded) << encoded.error().message;
  EXPECT_EQ(encoded->password, "s3c@ret");
  EXPECT_EQ(encoded->hosts.at(0).host, "127.0.0.1");
}

TEST(url, what_looks_like_a_password_elsewhere_is_kept) {
  for (std::string text : {"redis://h:6379?description=a:b@c", "redis://h?description=a:b/c@d",
                           "sqlite:///tmp/a:b/c@d.db", "redis://[::1]:6379/0"}) {
    auto u = parse_url(text);
    ASSERT_TRUE(u) << text << ": " << u.error().message;
    EXPECT_EQ(u->redacted, text);
    EXPECT_EQ(redact_url_text(text), text);
  }
  EXPECT_EQ(redact_url_text("redis://u:1234@h"), "redis://u:***@h");
  EXPECT_EQ(redact_url_text("redis://u@h:1"), "redis://u@h:1");
}

// The password ends at its own '@', not at an '@' of the query after it.
TEST(url, a_password_and_an_at_in_the_query_both_parse) {
  for (std::string scheme : {"redis", "postgres", "mysql", "etcd", "zk"}) {
    const std::string text = scheme + "://u:pw@h:1/?description=a@b";
    auto u = parse_url(text);
    ASSERT_TRUE(u) << text << ": " << u.error().message;
    EXPECT_EQ(u->password, "pw");
    EXPECT_EQ(u->hosts.at(0).host, "h");
    EXPECT_EQ(u->redacted.find("pw"), std::string::npos) << u->redacted;
  }
  // A '?' in the password is still refused, whatever the query holds, and no message quotes
  // what may be the password (with an '@' after the '?', the whole stretch up to it).
  for (std::string text : {"redis://u:p?ss@h:1/", "redis://u:p?ss@h:1/?description=a@b"}) {
    auto u = parse_url(text);
    ASSERT_FALSE(u) << text;
    EXPECT_NE(u.error().message.find("percent-encode"), std::string::npos) << u.error().message;
    EXPECT_EQ(u.error().message.find("ss@h"), std::string::npos) << u.error().message;
    EXPECT_EQ(u.error().message.find("p?ss"), std::string::npos) << u.error().message;
  }
}

TEST(url, scheme_is_case_insensitive) {
  auto u = parse_url("REDIS://h:1?ttl=5s");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->scheme, "redis");
  EXPECT_EQ(u->redacted, "REDIS://h:1?ttl=5s");
}

TEST(url, ttl_in_options_and_url_must_agree) {
  std::error_code ec;
  auto s = dlock::session::open("memory://twice?ttl=5s", {.ttl = 20s}, ec);
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, make_error_code(errc::invalid_argument));
  EXPECT_NE(dlock::last_error_message().find("ttl given twice"), std::string::npos)
      << dlock::last_error_message();
  // A library user has no --ttl: the message names the option as the code spells it.
  EXPECT_NE(dlock::last_error_message().find("in the options (session_options::ttl)"),
            std::string::npos)
      << dlock::last_error_message();
  EXPECT_EQ(dlock::last_error_message().find("--ttl"), std::string::npos)
      << dlock::last_error_message();
  // The default's value, given, is given: it was taken for unset and the URL's won.
  auto default_given = dlock::session::open("memory://twice?ttl=5s", {.ttl = 15s}, ec);
  EXPECT_FALSE(default_given);
  EXPECT_EQ(ec, make_error_code(errc::invalid_argument));
  EXPECT_NE(dlock::last_error_message().find("ttl given twice: 15.0s"), std::string::npos)
      << dlock::last_error_message();
  dlock::session_options assigned;
  assigned.ttl = 15s;
  EXPECT_FALSE(dlock::session::open("memory://twice?ttl=5s", assigned, ec));
  auto keepalive =
      dlock::session::open("memory://twice?keepalive=2s", {.keepalive_interval = 1s}, ec);
  EXPECT_FALSE(keepalive);
  EXPECT_NE(dlock::last_error_message().find("(session_options::keepalive_interval)"),
            std::string::npos)
      << dlock::last_error_message();
  // The same value twice, or the URL alone, is fine.
  auto same = dlock::session::open("memory://twice?ttl=5s", {.ttl = 5s}, ec);
  EXPECT_TRUE(same) << ec.message();
  auto url_only = dlock::session::open("memory://twice?ttl=5s", {}, ec);
  ASSERT_TRUE(url_only) << ec.message();
  EXPECT_EQ(url_only.ttl(), 5s);
  auto default_only = dlock::session::open("memory://twice", {.ttl = 15s}, ec);
  ASSERT_TRUE(default_only) << ec.message();
  EXPECT_EQ(default_only.ttl(), 15s);
}

TEST(duration, takes_units) {
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("2m"), 120s);
  EXPECT_EQ(*parse_duration("1h"), 3600s);
  EXPECT_EQ(*parse_duration("1m30s"), 90s);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("0"), 0ms);
  EXPECT_EQ(*parse_duration("1500us"), 2ms) << "rounds up, never to zero";
  // As Go spells microseconds too: the micro sign and the Greek mu.
  EXPECT_EQ(*parse_duration("1500\u00b5s"), 2ms);
  EXPECT_EQ(*parse_duration("1s500\u03bcs"), 1001ms);
  for (auto bad : {"", "5", "s", "5x", "-1s", "1.2.3s", "ms5"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d) << bad;
    if (!d) {
      EXPECT_NE(d.error().message.find("duration"), std::string::npos);
    }
  }
  // A stray character is named with where it is, never "expected a number" after "1s".
  for (auto [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"1s ", "duration '1s ': unexpected ' ' after '1s'"},
           {" 1s", "duration ' 1s': unexpected ' ' at the start"},
           {"1 s", "unexpected ' ' after '1'"},
           {"1m,30s", "unexpected ',' after '1m'"},
           // The whole character, not its first byte (a tester saw '\xef\xbf\xbd').
           {"1\u00e9s", "unexpected '\u00e9' after '1'"},
           {"5", "missing unit"}}) {
    auto d = parse_duration(text);
    ASSERT_FALSE(d) << text;
    EXPECT_NE(d.error().message.find(says), std::string::npos)
        << text << " -> " << d.error().message;
  }
  auto negative = parse_duration("-5s");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message.find("must not be negative"), std::string::npos)
      << negative.error().message;
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(250ms), "250ms");
}

TEST(lock_name, rules) {
  EXPECT_TRUE(validate_lock_name("a"));
  EXPECT_TRUE(validate_lock_name(std::string(255, 'a')));
  EXPECT_TRUE(validate_lock_name("ünïcødé/名前 with spaces; 'quotes'"));
  EXPECT_FALSE(validate_lock_name(""));
  EXPECT_FALSE(validate_lock_name(std::string(256, 'a')));
  EXPECT_FALSE(validate_lock_name("tab\there"));
  EXPECT_FALSE(validate_lock_name(std::string("nul\0x", 5)));
  EXPECT_FALSE(validate_lock_name("\x7f"));
  EXPECT_FALSE(validate_lock_name("\xc3"));      // truncated sequence
  EXPECT_FALSE(validate_lock_name("\xc0\xaf"));  // overlong
  // RFC 3629: overlong 3- and 4-byte forms, surrogates, beyond U+10FFFF.
  EXPECT_FALSE(validate_lock_name("\xe0\x80\xaf"));
  EXPECT_FALSE(validate_lock_name("\xf0\x80\x80\xaf"));
  EXPECT_FALSE(validate_lock_name("\xed\xa0\x80"));
  EXPECT_FALSE(validate_lock_name("\xed\xbf\xbf"));
  EXPECT_FALSE(validate_lock_name("\xf4\x90\x80\x80"));
  EXPECT_FALSE(validate_lock_name("\xf5\x80\x80\x80"));
  // Their neighbours: U+D7FF, U+E000, U+10FFFF, U+0800, U+10000.
  for (const char* fine :
       {"\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf", "\xe0\xa0\x80", "\xf0\x90\x80\x80"}) {
    EXPECT_TRUE(validate_lock_name(fine)) << fine;
  }
}

// Bidirectional formatting characters reorder the text shown around them: "job\u202Egpj.exe"
// shows as "jobexe.jpg", one name passing for another in a status line or a log.
TEST(lock_name, bidirectional_controls_are_refused_and_their_neighbours_are_not) {
  for (const char* bidi : {"\xd8\x9c", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
                           "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa9"}) {
    auto r = validate_lock_name(std::string("job") + bidi + "gpj.exe");
    ASSERT_FALSE(r) << bidi;
    EXPECT_NE(r.error().message.find("bidirectional control character U+"), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("at byte 3"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(bidi_control_at("a\xe2\x80\xae", 1), U'\u202e');
  // Their neighbours: U+061B, U+200D (the joiner emoji use), U+2010, U+2065, U+206A, U+2029.
  for (const char* fine : {"\xd8\x9b", "\xe2\x80\x8d", "\xe2\x80\x90", "\xe2\x81\xa5",
                           "\xe2\x81\xaa", "\xe2\x80\xa9"}) {
    EXPECT_TRUE(validate_lock_name(std::string("n") + fine)) << fine;
  }
}

}  // namespace
}  // namespace dlock::detail
