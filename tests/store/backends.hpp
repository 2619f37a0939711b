// The two store backends as typed-test parameters: where a fresh store lives, and how to
// reach its database directly (as someone editing it underneath gpubank would).
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <pqxx/pqxx>
#include <string>

#include "core/expected.hpp"
#include "support/postgres_server.hpp"

namespace gpubank::testing {

struct SqliteBackend {
  static constexpr const char* kName = "sqlite";

  // A new, empty location (a file that does not exist yet in a fresh directory).
  static Expected<std::string> fresh_location() {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string dir = ::testing::TempDir() + "/gpubank-store-" + std::to_string(::getpid()) + "-" +
                            (info != nullptr ? std::string(info->name()) : "x") + "-" + std::to_string(++counter);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec) return Unexpected{"cannot create " + dir + ": " + ec.message()};
    return dir + "/bank.db";
  }

  // Runs SQL on the database directly, outside gpubank.
  static Expected<bool> exec_raw(const std::string& location, const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(location.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return Unexpected{"cannot open " + location};
    }
    sqlite3_busy_timeout(db, 10'000);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    std::string text = message != nullptr ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    if (rc != SQLITE_OK) return Unexpected{text};
    return true;
  }

  // Removes what fresh_location() made.
  static void remove(const std::string& location) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(location).parent_path(), ec);
  }

  static std::string drop_audit_triggers() { return "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete"; }
  static std::string drop_ledger_triggers() { return "DROP TRIGGER ledger_no_update; DROP TRIGGER ledger_no_delete"; }
  static std::string record_future_schema(int version) {
    return "INSERT INTO schema_migrations (version, description, applied_at_ms) VALUES (" + std::to_string(version) +
           ", 'from the future', 0)";
  }
  static std::string missing_location() { return ::testing::TempDir() + "/gpubank-no-such-dir/bank.db"; }
};

struct PostgresBackend {
  static constexpr const char* kName = "postgresql";

  static Expected<std::string> fresh_location() {
    auto server = shared_postgres_server();
    if (!server) return Unexpected{server.error()};
    return (*server)->fresh_url();
  }

  static Expected<bool> exec_raw(const std::string& location, const std::string& sql) {
    try {
      pqxx::connection c(location);
      pqxx::nontransaction n(c);
      n.exec(sql);
    } catch (const std::exception& e) {
      return Unexpected{e.what()};
    }
    return true;
  }

  // The schema goes with the server when the process ends.
  static void remove(const std::string& /*location*/) {}

  static std::string drop_audit_triggers() {
    return "DROP TRIGGER audit_append_only ON audit; DROP TRIGGER audit_no_truncate ON audit";
  }
  static std::string drop_ledger_triggers() {
    return "DROP TRIGGER ledger_append_only ON ledger; DROP TRIGGER ledger_no_truncate ON ledger";
  }
  static std::string record_future_schema(int version) {
    return "INSERT INTO schema_migrations (version, description) VALUES (" + std::to_string(version) +
           ", 'from the future')";
  }
  static std::string missing_location() {
    auto server = shared_postgres_server();
    return server ? (*server)->url("no_such_database") : "postgresql://gpubank@/no_such_database?host=/nonexistent";
  }
};

class BackendNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return T::kName;
  }
};

}  // namespace gpubank::testing
