// temp_dir.hpp: a fresh folder per test, removed afterwards, and small file
// helpers for the file/format/session tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnscope/base/trace.hpp"

namespace attnscope::core::testing {

// A new empty folder under the system's temp folder; removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "attnscope-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // The names in the folder, sorted (hidden temporaries included).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Bitwise equality: NaN equals NaN, -0 differs from +0. Empty matrices (no
// bias) have no data pointer, and memcmp must not be given a null one.
inline bool same_bits(const RowMatrix& a, const RowMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 ||
          std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0);
}

// Expects two traces to hold the same stages with the same bits.
inline void expect_identical_traces(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.stages.size(), b.stages.size());
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.d_in, b.d_in);
  for (std::size_t k = 0; k < a.stages.size(); ++k) {
    EXPECT_EQ(a.stages[k].id, b.stages[k].id) << "stage " << k;
    EXPECT_EQ(a.stages[k].head, b.stages[k].head) << a.stages[k].id;
    EXPECT_TRUE(same_bits(a.stages[k].data(), b.stages[k].data()))
        << a.stages[k].id << " head " << a.stages[k].head << " differs";
  }
}

}  // namespace attnscope::core::testing
