#pragma once
// A real, migrated SQLite file for the store's unit tests, opened in SetUp in a folder of its
// own. A fixture with more to set up calls MigratedDbTest::SetUp() first.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "crcrd/store/schema.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

class MigratedDbTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto d = store::Db::open(db_path());
        ASSERT_TRUE(d) << d.error().message;
        db = std::move(*d);
        ASSERT_TRUE(store::migrate(*db));
    }
    std::filesystem::path db_path() const { return dir.path() / "a.db"; }

    TempDir dir;
    std::unique_ptr<store::Db> db;
};

}  // namespace crcrd
