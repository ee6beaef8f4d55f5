// TempDir.h — a fresh temporary directory per GoogleTest test (driver and token-file tests).
#ifndef TGC_TEST_UNIT_TEMPDIR_H
#define TGC_TEST_UNIT_TEMPDIR_H

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace tgc_test {

/// A fresh directory <tmp>/<prefix>-<test name>-<pid>, created empty and removed (with its
/// contents) at the end of the test; `dir / "name"` is the path of a file in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tgc-test") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           (prefix + "-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

} // namespace tgc_test

#endif // TGC_TEST_UNIT_TEMPDIR_H
