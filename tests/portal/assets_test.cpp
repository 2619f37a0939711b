// The portal's files as the binary holds them (src/portal/assets.hpp): the page and its
// modules are all there with their content types, and what a --portal-dir request may name.
#include "portal/assets.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpubank::portal {
namespace {

TEST(PortalAssets, ThePageAndEveryModuleItImportsAreBuiltIn) {
  const auto index = find_asset("index.html");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("/portal/app.js"), std::string_view::npos);
  std::set<std::string> names;
  for (const Asset& a : assets()) {
    names.insert(std::string(a.path));
    EXPECT_EQ(content_type_of(a.path), a.content_type) << a.path;
    EXPECT_TRUE(plain_asset_name(a.path)) << a.path;
    EXPECT_FALSE(a.body.empty()) << a.path;
  }
  // Every relative import of every module names a built-in file.
  for (const Asset& a : assets()) {
    if (!a.path.ends_with(".js")) continue;
    const std::string dir = a.path.find('/') == std::string_view::npos ? "" : std::string(a.path.substr(0, a.path.rfind('/') + 1));
    for (std::size_t at = a.body.find("from '"); at != std::string_view::npos; at = a.body.find("from '", at + 1)) {
      const std::size_t end = a.body.find('\'', at + 6);
      std::string target = std::string(a.body.substr(at + 6, end - at - 6));
      if (!target.starts_with(".")) continue;
      std::string base = dir;
      while (target.starts_with("../")) {
        target = target.substr(3);
        base = base.empty() ? "" : base.substr(0, base.rfind('/', base.size() - 2) + 1);
        if (base == "/") base.clear();
      }
      if (target.starts_with("./")) target = target.substr(2);
      EXPECT_TRUE(names.contains(base + target)) << a.path << " imports " << base + target;
    }
  }
  EXPECT_FALSE(find_asset("dev/serve.py"));
}

TEST(PortalAssets, OnlyPlainNamesMayBeAskedFor) {
  for (const char* ok : {"app.js", "views/overview.js", "style.css", "a-b_c/d.svg"}) EXPECT_TRUE(plain_asset_name(ok)) << ok;
  for (const char* bad : {"../auth.db", "views/../../etc/passwd.js", ".hidden.js", "views//x.js", "/abs.js", "x.JS",
                          "x", "views/", "a/.b.js", "a b.js", "x.js\n", "%2e%2e/x.js"}) {
    EXPECT_FALSE(plain_asset_name(bad)) << bad;
  }
  EXPECT_FALSE(content_type_of("x.py"));
  EXPECT_FALSE(content_type_of("noext"));
}

}  // namespace
}  // namespace gpubank::portal
