#pragma once
// A fresh directory under $TMPDIR, removed with everything in it on destruction.

#include <filesystem>
#include <string>

namespace crcrd {

class TempDir {
  public:
    TempDir();
    /// A fresh directory under `base` instead.
    explicit TempDir(const std::filesystem::path& base);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }

  private:
    std::filesystem::path m_path;
};

/// Writes `content` to `path` (creating parent folders), with `mode` permissions.
void write_file(const std::filesystem::path& path, const std::string& content,
                unsigned mode = 0644);

}  // namespace crcrd
