// Fuzzes what the token check reads from outside: a presented token (an Authorization
// header's value) and a grant as the store's audit entry holds it. Whatever the input: no
// crash, no undefined behaviour; only the one issued token authenticates; a grant that
// reads back writes back to the same grant; an error is one line naming the grant's field.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "auth/tokens.hpp"
#include "core/utf8.hpp"

using namespace gpubank;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\ntoken_fuzzer: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

struct Known {
  auth::TokenBook book;
  std::string token;
  Known() {
    auto issued = auth::issue({"sam", auth::Role::GroupAdmin, "search", "root", std::nullopt}, 1'764'000'000'000);
    if (!issued) fail("issue failed", issued.error());
    token = issued->token;
    book.grants[issued->grant.id] = issued->grant;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Known known;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto who = auth::authenticate(known.book, input, 1'764'000'000'000);
  if (who && input != known.token && input != "Bearer " + known.token) fail("another text authenticated", input);

  auto grant = auth::parse_grant(input);
  if (!grant) {
    const std::string& m = grant.error();
    if (m.empty() || m.find('\n') != std::string::npos || !is_utf8(m) || !m.starts_with("grant")) {
      fail("an error is not one line naming the grant's field", m);
    }
    return 0;
  }
  auto again = auth::parse_grant(auth::grant_json(*grant));
  if (!again || !(*again == *grant)) fail("a grant does not read back", input);
  return 0;
}
